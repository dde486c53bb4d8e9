#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_ratelimit::fuzzing;

fuzz_target!(|data: &[u8]| fuzzing::args_several(data));
