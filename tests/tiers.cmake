# What each test needs, as ctest labels: one tier per test, from the first
# rule below that matches its name, and the extra labels after it.
# tests/README.md is the map; every folder's CMakeLists.txt ends with
# obx_test_tiers(), and a test no rule places fails the configure.
#
#   local     no server at all (unit, SDK, fuzz smoke, config checks)
#   db        PostgreSQL only (the memory or file driver as the broker)
#   kafka     PostgreSQL and the Kafka mock cluster (or a private one)
#   rabbitmq  PostgreSQL and RabbitMQ (the shared one, or a private one)
#   mqtt      PostgreSQL and Mosquitto (mostly private ones): the mqtt and
#             mosquitto drivers (mosq_*)
#   webhook   PostgreSQL and the test's own HTTP receiver
# extra:
#   unit      the cmocka unit tests (local); spec: the SQL specs (db)
#   faults    stops, hangs, kills or restarts a server or cuts its sessions
#   slow      about 15 s or more alone (OBX_SLOW_TESTS below)
#
# (several tiers after one rule: separated by commas)
# Every test keeps to its own database (TEST_DB_PREFIX before its name),
# work directory (mktemp), ports (free_ports in tests/lib.sh), queues, topics
# and replication slots, so tests/run.sh runs them four at a time. One runs
# alone (RUN_SERIAL): engine_huge_text_payload; spec_slot_reused has a
# PostgreSQL of its own.
set(OBX_TIER_RULES
  "^unit_" local,unit
  "^sdk_" local
  "^docs_" local
  "^(chaos_checker|ce_config|metrics_prometheus_rules|webhook_status|webhook_conformance|webhook_pushback|fuzz_smoke)$" local
  "^chaos_quick$" kafka,rabbitmq,mqtt
  "^(kafka_|wal_kafka_)" kafka
  "^(engine|wal)_aggregate_seq$" kafka
  "^(rmq_|wal_rmq_|wal_rabbitmq_)" rabbitmq
  "^(engine|wal)_(churn|failover)$" rabbitmq
  "^engine_check_connect$" kafka,rabbitmq
  "^(poll|wal)_(routing|dead_output)$" rabbitmq
  "^(mqtt_|wal_mqtt_|mosq_)" mqtt
  "^webhook_" webhook
  "^tls_pg$" db
  "^tls_(mqtt|mosq)$" mqtt
  "^tls_webhook$" webhook
  "^tls_rabbitmq$" rabbitmq
  "^tls_kafka$" kafka
  "^spec_" db,spec
  "^(engine_|wal_|cursor_|poll_|metrics_)" db
  "^(status_held|package_notify|bench_smoke)$" db
)

set(OBX_FAULT_TESTS
  "^(kafka|rmq|mqtt|mosq|engine|wal|cursor|webhook|poll)_(.*_)?(sigstop|hang|hang_one|outage|faults|pg_restart|failover|alarm|churn|slot_lost)$"
  "^(engine_max_connections|engine_hung_broker|wal_standby_hung|kafka_driver_recover)$"
  "^(mqtt_restart|mqtt_restart_order|mqtt_stop_hung|chaos_quick|metrics_prometheus_alerts|metrics_socket)$"
)

# slow: 30 s or more in a run of the whole suite four at a time on this
# machine (2 cores, shared), about 15 s or more alone; tests/run.sh --quick
# leaves them out. Names, not patterns: a new test is not slow until measured.
set(OBX_SLOW_TESTS
  chaos_quick cursor_crash cursor_partitions cursor_pg_restart cursor_shards cursor_standby
  engine_admin engine_churn engine_config_shapes engine_conninfo_secret engine_crash engine_failover
  engine_hostile_names engine_huge_text_payload engine_ordering engine_part_crash engine_part_ordering
  engine_partition_managed engine_pg_restart engine_pipeline engine_purge engine_replay engine_sources
  engine_sql_injection fuzz_smoke kafka_driver_hang kafka_driver_hang_one kafka_e2e kafka_e2e_sigstop
  metrics_prometheus_alerts metrics_values mqtt_driver mqtt_driver_hang mqtt_e2e mqtt_e2e_sigstop
  mqtt_outage mqtt_restart mqtt_restart_order poll_fanout poll_pause poll_progress wal_progress
  cursor_progress rmq_driver_alarm
  rmq_driver_channel_errors rmq_driver_faults rmq_e2e rmq_e2e_alarm rmq_e2e_faults rmq_e2e_nack
  rmq_e2e_outage rmq_e2e_sigstop wal_aggregate_seq wal_churn wal_crash
  wal_dead_output wal_failover wal_fanout wal_huge_payload wal_kafka_e2e wal_mqtt_e2e wal_partitions
  wal_pause wal_pg_restart wal_purge wal_rabbitmq_e2e wal_replay wal_standby wal_standby_hung
  wal_window_bytes webhook_e2e webhook_e2e_sigstop
)

# Seconds in that run, for the tests of a minute or more: ctest starts the
# costliest first (COST), so that no long test starts last and stretches the
# end of the run. (After a run, ctest's own measurements in the build tree
# take over.)
set(OBX_TEST_COSTS
  chaos_quick=278 engine_huge_text_payload=258 fuzz_smoke=212 wal_failover=210 engine_failover=206
  wal_churn=139 engine_churn=138 mqtt_e2e=133 rmq_e2e=126 rmq_e2e_alarm=125 wal_fanout=117
  poll_fanout=109 rmq_driver_faults=104 rmq_e2e_sigstop=101 wal_huge_payload=98 mqtt_e2e_sigstop=95
  cursor_pg_restart=95 mqtt_driver=92 kafka_e2e_sigstop=89 wal_pg_restart=86
  metrics_prometheus_alerts=86 rmq_driver_alarm=81 mqtt_restart=76 engine_config_shapes=70
  rmq_e2e_faults=69
)

function(obx_test_tiers)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t ${tests})
    set(labels "")
    set(rules ${OBX_TIER_RULES})
    list(LENGTH rules n)
    set(i 0)
    while(i LESS n)
      list(GET rules ${i} re)
      math(EXPR j "${i} + 1")
      list(GET rules ${j} tier)
      if(t MATCHES "${re}")
        string(REPLACE "," ";" labels "${tier}")
        break()
      endif()
      math(EXPR i "${i} + 2")
    endwhile()
    if(NOT labels)
      message(FATAL_ERROR "test ${t}: no tier in tests/tiers.cmake places it (local, db or a broker)")
    endif()
    foreach(re ${OBX_FAULT_TESTS})
      if(t MATCHES "${re}")
        list(APPEND labels faults)
        break()
      endif()
    endforeach()
    if(t IN_LIST OBX_SLOW_TESTS)
      list(APPEND labels slow)
    endif()
    set_tests_properties(${t} PROPERTIES LABELS "${labels}")
    foreach(tc ${OBX_TEST_COSTS})
      if(tc MATCHES "^${t}=([0-9]+)$")
        set_tests_properties(${t} PROPERTIES COST ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endforeach()
endfunction()
