# install(SCRIPT) of dist/systemd: runs at install time, when
# CMAKE_INSTALL_PREFIX is the prefix being installed to. Writes both units
# from vbus-hostd.service.in and installs them, and taps.conf (which names
# the installed vbus-taps).
function(vbus_install_path out path)
  if(IS_ABSOLUTE "${path}")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${path}" PARENT_SCOPE)
  endif()
endfunction()

vbus_install_path(VBUS_HOSTD_BIN "${VBUS_BINDIR}/vbus-hostd")
vbus_install_path(VBUS_DOCDIR "${VBUS_DOCDIR_REL}")
vbus_install_path(VBUS_TAPS_BIN "${VBUS_LIBEXECDIR}/vbus/vbus-taps")
vbus_install_path(datadir "${VBUS_DATADIR}")
vbus_install_path(unitdir "${VBUS_UNITDIR}")

# One daemon for every guest in one file.
set(VBUS_UNIT_NAME vbus-hostd.service)
set(VBUS_UNIT_WHAT "one daemon for the guests in /etc/vbus/vbus-hostd.conf")
set(VBUS_UNIT_DESC "guests of /etc/vbus/vbus-hostd.conf")
set(VBUS_UNIT_CONF /etc/vbus/vbus-hostd.conf)
set(VBUS_UNIT_CTL /run/vbus/ctl.sock)
configure_file(${VBUS_UNIT_SRC}/vbus-hostd.service.in
               ${VBUS_UNIT_WORK}/vbus-hostd.service @ONLY)

# One daemon per file: vbus-hostd@NAME runs /etc/vbus/NAME.conf.
set(VBUS_UNIT_NAME vbus-hostd@.service)
set(VBUS_UNIT_WHAT "one daemon per /etc/vbus/NAME.conf (vbus-hostd@NAME)")
set(VBUS_UNIT_DESC "/etc/vbus/%i.conf")
set(VBUS_UNIT_CONF /etc/vbus/%i.conf)
set(VBUS_UNIT_CTL /run/vbus/%i.ctl.sock)
configure_file(${VBUS_UNIT_SRC}/vbus-hostd.service.in
               ${VBUS_UNIT_WORK}/vbus-hostd@.service @ONLY)

file(INSTALL ${VBUS_UNIT_WORK}/vbus-hostd.service
             ${VBUS_UNIT_WORK}/vbus-hostd@.service
     DESTINATION "${unitdir}" FILE_PERMISSIONS OWNER_READ OWNER_WRITE
     GROUP_READ WORLD_READ)

# The taps drop-in: ExecStartPre= names the installed helper.
configure_file(${VBUS_UNIT_SRC}/taps.conf.in ${VBUS_UNIT_WORK}/taps.conf @ONLY)
file(INSTALL ${VBUS_UNIT_WORK}/taps.conf
     DESTINATION "${datadir}/vbus/systemd" FILE_PERMISSIONS OWNER_READ
     OWNER_WRITE GROUP_READ WORLD_READ)
