# Installs the broker's service files for the prefix being installed to, at install time, so
# that a .deb built by CPack and a `cmake --install --prefix P` both get paths that match what
# they install: the systemd unit (its ExecStart and -c path configured here) and broker.conf.
# A prefix ending in /usr (the .deb's, also inside CPack's staging tree) is the system one: the
# configuration goes to /etc/uringmq (FHS) and the unit runs /usr/bin/uringmq-broker. Any other
# prefix P keeps everything under P: P/etc/uringmq, P/lib/systemd/system, P/bin.
# Needs URINGMQ_SOURCE_DIR and URINGMQ_BINARY_DIR (set by the install(CODE) before it).
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix MATCHES "/usr$")
  string(REGEX REPLACE "/usr$" "" root "${prefix}")
  set(etc_dir "${root}/etc/uringmq")
  set(run_prefix "/usr")
  set(run_etc "/etc/uringmq")
else()
  set(etc_dir "${prefix}/etc/uringmq")
  set(run_prefix "${prefix}")
  set(run_etc "${prefix}/etc/uringmq")
endif()
set(URINGMQ_BROKER_BIN "${run_prefix}/bin/uringmq-broker")
set(URINGMQ_BROKER_CONF "${run_etc}/broker.conf")
set(URINGMQ_DOC_DIR "${run_prefix}/share/doc/uringmq")
set(unit "${URINGMQ_BINARY_DIR}/uringmq-broker.service")
configure_file("${URINGMQ_SOURCE_DIR}/tools/uringmq-broker.service.in" "${unit}" @ONLY)
file(INSTALL DESTINATION "${prefix}/lib/systemd/system" TYPE FILE FILES "${unit}")
# An installed broker.conf is the operator's: a reinstall keeps it (as dpkg does a conffile).
if(EXISTS "$ENV{DESTDIR}${etc_dir}/broker.conf")
  message(STATUS "Keeping: $ENV{DESTDIR}${etc_dir}/broker.conf")
else()
  file(INSTALL DESTINATION "${etc_dir}" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES "${URINGMQ_SOURCE_DIR}/tools/broker.conf")
endif()
