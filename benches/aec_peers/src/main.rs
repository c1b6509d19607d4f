//! `aec-peers aec3 <reference.raw> <mic.raw> <out.raw> <rate_hz>`: run a peer canceller over
//! mono PCM16 little-endian files in 10 ms blocks; prints the processing time in seconds.

use std::time::Instant;

use aec3::nodes::audio::AudioFormat;
use aec3::pipelines::linear;

fn read(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).expect("readable input");
    bytes.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    assert!(args.len() == 6 && args[1] == "aec3", "usage: aec-peers aec3 ref.raw mic.raw out.raw rate_hz");
    let (reference, mic) = (read(&args[2]), read(&args[3]));
    let rate: u32 = args[5].parse().expect("rate_hz");
    let format = AudioFormat::ten_ms(rate, 1);
    // Echo cancellation alone (as LiveKit is run): no noise suppression, no gain control, which
    // would change levels the figures measure.
    let mut pipeline = linear::builder(format, format)
        .enable_noise_suppression(false)
        .enable_gain_controller2(false)
        .enable_high_pass_filter(true)
        .initial_delay_ms(0)
        .build()
        .expect("pipeline");
    let n = format.sample_count();
    let mut out = vec![0f32; mic.len()];
    let mut processed = vec![0f32; n];
    let started = Instant::now();
    for at in (0..mic.len().min(reference.len()).saturating_sub(n - 1)).step_by(n) {
        pipeline.handle_render_frame(&reference[at..at + n]).expect("render");
        if pipeline.process_capture_frame(&mic[at..at + n], &mut processed).expect("capture") {
            out[at..at + n].copy_from_slice(&processed);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes: Vec<u8> = out
        .iter()
        .flat_map(|v| ((v * 32768.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes())
        .collect();
    std::fs::write(&args[4], bytes).expect("writable output");
    println!("{seconds}");
}
