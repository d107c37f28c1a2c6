# What an installed relay has beyond the binary, drivers and driver SDK: the
# man page (made from --help), the systemd unit, the docs and example
# configs; and the .deb that CPack builds from that install:
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DOBX_TESTS=OFF
#   cmake --build build-deb -j && (cd build-deb && cpack -G DEB)
set(OBX_CONF_DIR ${CMAKE_CURRENT_LIST_DIR})

set(OBX_MAN ${CMAKE_BINARY_DIR}/outbox-relay.1)
add_custom_command(OUTPUT ${OBX_MAN}.gz
  COMMAND sh ${OBX_CONF_DIR}/man/man-from-help.sh $<TARGET_FILE:outbox-relay> ${OBX_MAN}
  COMMAND gzip -9nf ${OBX_MAN}
  DEPENDS outbox-relay ${OBX_CONF_DIR}/man/man-from-help.sh
  COMMENT "man page from outbox-relay --help" VERBATIM)
add_custom_target(man ALL DEPENDS ${OBX_MAN}.gz)
install(FILES ${OBX_MAN}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# under the prefix: /usr/lib/systemd/system for the package, and systemd also
# reads /usr/local/lib/systemd/system for a plain `cmake --install`
configure_file(${OBX_CONF_DIR}/systemd/outbox-relay@.service.in
  ${CMAKE_BINARY_DIR}/outbox-relay@.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/outbox-relay@.service DESTINATION lib/systemd/system)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
# Debian's place for the licence: share/doc/<package>/copyright (machine-readable format)
install(FILES ${OBX_CONF_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB obx_example_configs ${OBX_CONF_DIR}/*.conf)
install(FILES ${obx_example_configs} ${OBX_CONF_DIR}/systemd/example.env
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${OBX_CONF_DIR}/prometheus/outbox-relay.rules.yml ${OBX_CONF_DIR}/grafana/outbox-relay.json
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/monitoring)
file(GLOB obx_driver_docs RELATIVE ${PROJECT_SOURCE_DIR}/drivers ${PROJECT_SOURCE_DIR}/drivers/*/README.md)
foreach(doc ${obx_driver_docs})
  get_filename_component(name ${doc} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/drivers/${doc} DESTINATION ${CMAKE_INSTALL_DOCDIR}/drivers
    RENAME ${name}.md)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME outbox-relay)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "outbox-relay maintainers <outbox-relay@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "transactional-outbox relay from PostgreSQL to Kafka, RabbitMQ and MQTT")
set(CPACK_PACKAGE_DESCRIPTION
  "Publishes every committed outbox row at least once, in order per aggregate, and marks it
published only after the broker's durable acknowledgement. Brokers are drivers loaded at run
time. Includes the drivers, the driver SDK (header, pkg-config file), a systemd unit
outbox-relay@.service and example configs.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# libpq, libconfig, librdkafka, ... from the binary and the drivers; useradd from passwd
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${OBX_CONF_DIR}/debian/postinst ${OBX_CONF_DIR}/debian/prerm ${OBX_CONF_DIR}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
include(CPack)
