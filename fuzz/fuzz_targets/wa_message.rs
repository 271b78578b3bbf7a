//! Arbitrary protobuf bytes as a WhatsApp `WebMessageInfo` and `Message`: the mapper onto the
//! archive never panics. Needs `--features worker`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wazap_worker::fuzzing::wa_message(data));
