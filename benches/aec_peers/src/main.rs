//! `aec-peers aec3|sonora <reference.raw> <mic.raw> <out.raw> <rate_hz>`: run a peer canceller
//! over mono PCM16 little-endian files; prints the processing time in seconds.
//!
//! * `aec3`: the `aec3` crate's `linear` pipeline, 10 ms blocks, any rate it takes;
//! * `sonora`: `sonora-aec3`'s block processor (AEC3's core: delay estimation, adaptive filters,
//!   suppression) in 4 ms blocks at 16 kHz only (one band; the crate has no band splitter, so
//!   the caller resamples).

use std::time::Instant;

use aec3::nodes::audio::AudioFormat;
use aec3::pipelines::linear;

fn read(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).expect("readable input");
    bytes.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0).collect()
}

fn write(path: &str, out: &[f32], scale: f32) {
    let bytes: Vec<u8> = out
        .iter()
        .flat_map(|v| ((v * scale).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes())
        .collect();
    std::fs::write(path, bytes).expect("writable output");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: aec-peers aec3|sonora ref.raw mic.raw out.raw rate_hz";
    assert!(args.len() == 6 && (args[1] == "aec3" || args[1] == "sonora"), "{usage}");
    let (reference, mic) = (read(&args[2]), read(&args[3]));
    let rate: u32 = args[5].parse().expect("rate_hz");
    let seconds = if args[1] == "aec3" {
        run_aec3(&reference, &mic, rate, &args[4])
    } else {
        run_sonora(&reference, &mic, rate, &args[4])
    };
    println!("{seconds}");
}

/// AEC3's block processor as WebRTC's `EchoCanceller3` drives it: each 64-sample block of
/// reference is buffered, then the capture block is processed in place (samples in the int16
/// range, as AEC3 expects). Default configuration.
fn run_sonora(reference: &[f32], mic: &[f32], rate: u32, out_path: &str) -> f64 {
    use sonora_aec3::block::Block;
    use sonora_aec3::block_processor::BlockProcessor;
    use sonora_aec3::common::BLOCK_SIZE;
    use sonora_aec3::config::EchoCanceller3Config;

    assert_eq!(rate, 16_000, "sonora: 16 kHz only (resample first)");
    let mut processor = BlockProcessor::new(&EchoCanceller3Config::default(), 16_000, 1, 1);
    let (mut render, mut capture) = (Block::new(1, 1), Block::new(1, 1));
    let mut out = vec![0f32; mic.len()];
    let started = Instant::now();
    for at in (0..mic.len().min(reference.len()).saturating_sub(BLOCK_SIZE - 1)).step_by(BLOCK_SIZE) {
        for (d, s) in render.view_mut(0, 0).iter_mut().zip(&reference[at..at + BLOCK_SIZE]) {
            *d = s * 32768.0;
        }
        processor.buffer_render(&render);
        for (d, s) in capture.view_mut(0, 0).iter_mut().zip(&mic[at..at + BLOCK_SIZE]) {
            *d = s * 32768.0;
        }
        processor.process_capture(false, false, None, &mut capture);
        out[at..at + BLOCK_SIZE].copy_from_slice(capture.view(0, 0));
    }
    let seconds = started.elapsed().as_secs_f64();
    write(out_path, &out, 1.0);
    seconds
}

fn run_aec3(reference: &[f32], mic: &[f32], rate: u32, out_path: &str) -> f64 {
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
    write(out_path, &out, 32768.0);
    seconds
}
