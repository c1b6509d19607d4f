//! The echo canceller through its public API: a simulated room (exponential-decay impulse
//! response), speech-like far-end bursts, double-talk, bad parameters, chunking, and that
//! processing allocates nothing.

use voxwire_audio::{ConfigError, EchoCanceller, EchoConfig, ProcessError};

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

const RATE: usize = 16_000;

/// xorshift64*: a small deterministic generator, uniform in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        v as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Direct path after 2 ms, then a diffuse tail decaying 60 dB in `rt60_s`, unit energy.
fn room(rt60_s: f64, rng: &mut Rng) -> Vec<f64> {
    let n = (rt60_s * RATE as f64) as usize;
    let mut h: Vec<f64> =
        (0..n).map(|i| 0.5 * rng.next() * (-6.9 * i as f64 / RATE as f64 / rt60_s).exp()).collect();
    h[32] += 1.0;
    let e: f64 = h.iter().map(|v| v * v).sum::<f64>().sqrt();
    h.iter().map(|v| v / e).collect()
}

/// Coloured noise in syllable-like bursts (on 200 ms, off 100 ms), speech-ish for a filter.
fn talker(n: usize, level: f64, rng: &mut Rng) -> Vec<f64> {
    let mut lp = 0.0;
    (0..n)
        .map(|i| {
            lp = 0.8 * lp + 0.2 * rng.next();
            let on = (i * 10 / RATE) % 3 != 2;
            if on {
                lp * level
            } else {
                0.0
            }
        })
        .collect()
}

fn convolve(x: &[f64], h: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for (i, &v) in x.iter().enumerate().filter(|(_, v)| **v != 0.0) {
        for (j, &g) in h.iter().enumerate().take(x.len() - i) {
            y[i + j] += v * g;
        }
    }
    y
}

fn to_i16(x: &[f64]) -> Vec<i16> {
    x.iter().map(|v| v.round().clamp(-32768.0, 32767.0) as i16).collect()
}

fn power(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64
}

fn run(aec: &mut EchoCanceller, mic: &[i16], far: &[i16], chunk: usize) -> Vec<f64> {
    let mut out = vec![0i16; mic.len()];
    for ((m, r), o) in mic.chunks(chunk).zip(far.chunks(chunk)).zip(out.chunks_mut(chunk)) {
        aec.process(m, r, o).unwrap();
    }
    let lag = aec.latency_samples();
    out[lag..].iter().map(|&v| f64::from(v)).chain(std::iter::repeat_n(0.0, lag)).collect()
}

fn config() -> EchoConfig {
    EchoConfig { rate_hz: RATE as u32, ..EchoConfig::default() }
}

/// One test: the allocation count must not see other tests' threads.
#[test]
fn canceller() {
    chunk_sizes_do_not_change_the_output_and_nothing_allocates();
    echo_is_reduced_and_double_talk_kept();
    delay_search_finds_an_echo_beyond_the_tail();
    bad_parameters_and_buffers_are_refused();
}

/// The echo arrives 350 ms after its reference: the 300 ms tail cannot hold it, the search
/// finds it and the filter is fed the reference that much later.
fn delay_search_finds_an_echo_beyond_the_tail() {
    let mut rng = Rng(0xde1a);
    let n = 8 * RATE;
    let lead = 350 * RATE / 1000;
    let far = talker(n, 6000.0, &mut rng);
    let h = room(0.3, &mut rng);
    let mut echo = vec![0.0; lead];
    echo.extend(convolve(&far[..n - lead], &h));
    let (mic, far) = (to_i16(&echo), to_i16(&far));
    let erle = |out: &[f64]| {
        let (a, b) = (3 * RATE, n);
        10.0 * (power(&echo[a..b]) / power(&out[a..b]).max(1e-9)).log10()
    };
    // The control is the linear filter without the search: the post-filter alone removes a
    // good part of an echo the filter cannot reach (its overdrive is 10 dB since issue 31).
    let mut plain = EchoCanceller::new(EchoConfig { suppression_db: 0.0, ..config() }).unwrap();
    let without = erle(&run(&mut plain, &mic, &far, 160));
    let mut aec = EchoCanceller::new(EchoConfig { delay_search: true, ..config() }).unwrap();
    let with = erle(&run(&mut aec, &mic, &far, 160));
    assert!(without < 15.0, "without the search: {without}");
    assert!(with >= 25.0, "with the search: {with}");
    let stats = aec.stats();
    let estimate = stats.delay_estimate_samples.expect("an estimate");
    // The strongest path: in this room's first 20 ms (its early tail outweighs the direct
    // sound once decimated).
    assert!((lead..lead + RATE / 50).contains(&estimate), "estimate {estimate}");
    assert_eq!(stats.reference_delay_samples % aec.block_samples(), 0);
    assert!(stats.reference_delay_samples < estimate);
    assert_eq!(plain.stats().delay_estimate_samples, None);
}

fn echo_is_reduced_and_double_talk_kept() {
    let mut rng = Rng(0x5eed);
    let n = 8 * RATE;
    let far = talker(n, 6000.0, &mut rng);
    let echo = convolve(&far, &room(0.3, &mut rng));
    let mut user = vec![0.0; n];
    let user_speech = talker(2 * RATE, 1500.0, &mut rng);
    user[5 * RATE..7 * RATE].copy_from_slice(&user_speech);
    let mic: Vec<f64> = echo.iter().zip(&user).map(|(e, u)| e + u).collect();
    let mut aec = EchoCanceller::new(config()).unwrap();
    let out = run(&mut aec, &to_i16(&mic), &to_i16(&far), 160);

    let erle = |a: usize, b: usize| 10.0 * (power(&echo[a..b]) / power(&out[a..b]).max(1e-9)).log10();
    assert!(erle(RATE, 5 * RATE) >= 25.0, "ERLE after the first second: {}", erle(RATE, 5 * RATE));
    assert!(erle(7 * RATE, n) >= 20.0, "ERLE after double-talk: {}", erle(7 * RATE, n));
    // During double-talk what is left is mostly the user: far closer to them than the mic was.
    let talk = 5 * RATE..7 * RATE;
    let err_out: Vec<f64> = out[talk.clone()].iter().zip(&user[talk.clone()]).map(|(o, u)| o - u).collect();
    let err_mic: Vec<f64> = mic[talk.clone()].iter().zip(&user[talk.clone()]).map(|(m, u)| m - u).collect();
    let gain_db = 10.0 * (power(&err_mic) / power(&err_out)).log10();
    assert!(gain_db >= 8.0, "distortion of the user fell by only {gain_db} dB");
    assert!(aec.stats().converged);
}

fn chunk_sizes_do_not_change_the_output_and_nothing_allocates() {
    let mut rng = Rng(7);
    let n = 2 * RATE;
    let far = talker(n, 5000.0, &mut rng);
    let echo = convolve(&far, &room(0.2, &mut rng));
    let (mic, far) = (to_i16(&echo), to_i16(&far));
    // The delay search on, and an echo late enough for it to move the reference.
    let mut late = vec![0i16; 150 * RATE / 1000];
    late.extend_from_slice(&mic[..n - late.len()]);
    let searching = EchoConfig { delay_search: true, ..config() };
    let mut a = EchoCanceller::new(searching.clone()).unwrap();
    let mut b = EchoCanceller::new(searching).unwrap();
    let mic = late;
    let mut out_a = vec![0i16; n];
    let mut out_b = vec![0i16; n];
    let before = counting::allocations();
    for ((m, r), o) in mic.chunks(160).zip(far.chunks(160)).zip(out_a.chunks_mut(160)) {
        a.process(m, r, o).unwrap();
    }
    for ((m, r), o) in mic.chunks(37).zip(far.chunks(37)).zip(out_b.chunks_mut(37)) {
        b.process(m, r, o).unwrap();
    }
    assert_eq!(counting::allocations(), before, "processing allocated");
    assert_eq!(out_a, out_b);
    assert!(a.stats().reference_delay_samples > 0, "the search never moved the reference");
}

fn bad_parameters_and_buffers_are_refused() {
    for (cfg, name) in [
        (EchoConfig { rate_hz: 7_999, ..config() }, "rate_hz"),
        (EchoConfig { tail_ms: 10, ..config() }, "tail_ms"),
        (EchoConfig { suppression_db: f32::NAN, ..config() }, "suppression_db"),
        (EchoConfig { suppression_db: 81.0, ..config() }, "suppression_db"),
    ] {
        match EchoCanceller::new(cfg) {
            Err(e @ ConfigError::OutOfRange { .. }) => assert!(e.to_string().starts_with(name)),
            other => panic!("expected OutOfRange for {name}, got {:?}", other.map(|_| ())),
        }
    }
    let mut aec = EchoCanceller::new(config()).unwrap();
    let mut out = [0i16; 4];
    assert_eq!(
        aec.process(&[0; 4], &[0; 3], &mut out),
        Err(ProcessError::LengthMismatch { first: 4, second: 3 })
    );
    assert_eq!(
        aec.process(&[0; 5], &[0; 5], &mut out),
        Err(ProcessError::OutputTooSmall { needed: 5, given: 4 })
    );
}
