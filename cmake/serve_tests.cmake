# `segmux serve` end to end against a live server on 127.0.0.1 (tests/serve/*.py, Python 3 standard
# library only): the HTTP API, the page in headless Chromium (its screenshot stays in the build folder
# as an artifact: serve/serve_page.png) and a brief load test.
set(SERVE_TEST_ENV "SEGMUX=$<TARGET_FILE:segmux>" "SEGMUX_FIXTURES=${SEGMUX_FIXTURES}"
    "SEGMUX_SERVE_CACHE=${CMAKE_CURRENT_BINARY_DIR}/serve/cache")
add_test(NAME serve_http COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/serve/test_http.py)
add_test(NAME serve_browser COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/serve/test_browser.py
         ${CMAKE_CURRENT_BINARY_DIR}/serve/serve_page.png)
add_test(NAME serve_load COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/serve/load_test.py --clients 3 --rounds 2
         --time-limit 90)
set_tests_properties(serve_http PROPERTIES LABELS "serve;slow" TIMEOUT 900 ENVIRONMENT "${SERVE_TEST_ENV}")
set_tests_properties(serve_browser PROPERTIES LABELS "serve;browser;slow" TIMEOUT 900 ENVIRONMENT "${SERVE_TEST_ENV}")
set_tests_properties(serve_load PROPERTIES LABELS "serve;load;slow" TIMEOUT 900 ENVIRONMENT "${SERVE_TEST_ENV}")
# Hostile clients (slow headers, huge headers, chunked bodies, pipelining, SIGTERM, kill -9, a busy
# port) and three replicas behind a real HAProxy (deploy/haproxy/haproxy.cfg; docs/serve.md).
add_test(NAME serve_availability COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/serve/test_availability.py)
add_test(NAME serve_haproxy COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tests/serve/test_haproxy.py)
set_tests_properties(serve_availability PROPERTIES LABELS "serve;slow" TIMEOUT 600 ENVIRONMENT "${SERVE_TEST_ENV}")
set_tests_properties(serve_haproxy PROPERTIES LABELS "serve;slow" TIMEOUT 600 ENVIRONMENT "${SERVE_TEST_ENV}")
