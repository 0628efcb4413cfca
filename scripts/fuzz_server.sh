#!/usr/bin/env bash
# Fuzzes the server's request handling (JSON parsing, validation, chat
# template, tokenization; tests/fuzz/openai_request_fuzz.cpp) and the HTTP
# request parser (tests/fuzz/http_parser_fuzz.cpp) with libFuzzer
# (+ ASan/UBSan), N seconds each, from their committed corpora in
# tests/fuzz/corpus/. scripts/fuzz_all.sh says where findings go.
#   scripts/fuzz_server.sh [seconds, default 600]
exec "$(dirname "$0")/fuzz_all.sh" "${1:-600}" openai_request_fuzz http_parser_fuzz
