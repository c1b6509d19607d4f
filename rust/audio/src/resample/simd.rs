//! f32 lanes (8, or 16 with AVX-512): the one piece of the resampler's kernels that differs per
//! instruction set.
//!
//! The fused implementations (AVX-512F, AVX2+FMA on x86-64, NEON on aarch64) compute `mul_add`
//! lane by lane with one rounding per multiply-add. The kernels above them are shared, so the
//! order of operations is the same too, and their output is bit-identical; the portable one
//! rounds twice.

/// # Safety
/// `load` reads 8 floats at `p`; the caller guarantees they are in bounds. The AVX2
/// implementation may only be used after run-time detection of AVX2 and FMA, the AVX-512 one
/// after detection of AVX-512F.
pub(super) trait F32x8: Copy {
    unsafe fn zero() -> Self;
    unsafe fn splat(v: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    /// `self * b + c`, fused where the instruction set has it.
    unsafe fn mul_add(self, b: Self, c: Self) -> Self;
    unsafe fn to_array(self) -> [f32; 8];
}

/// Vectors of `W` lanes for the lane layout, where each lane is one output and lanes never mix,
/// so any width gives the same bits per output. Every [`F32x8`] is one (`W = 8`); AVX-512 adds
/// `W = 16`.
///
/// # Safety
/// As [`F32x8`], with `W` floats for `load` and `store`.
pub(super) trait LaneVec: Copy {
    const W: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(v: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn mul_add(self, b: Self, c: Self) -> Self;
    unsafe fn store(self, p: *mut f32);
}

impl<V: F32x8> LaneVec for V {
    const W: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: forwarded contract.
        unsafe { <V as F32x8>::zero() }
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        // SAFETY: forwarded contract.
        unsafe { <V as F32x8>::splat(v) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: forwarded contract (8 floats at `p`).
        unsafe { <V as F32x8>::load(p) }
    }
    #[inline(always)]
    unsafe fn mul_add(self, b: Self, c: Self) -> Self {
        // SAFETY: forwarded contract.
        unsafe { <V as F32x8>::mul_add(self, b, c) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: forwarded contract; the caller guarantees 8 writable floats at `p`.
        unsafe { p.cast::<[f32; 8]>().write_unaligned(<V as F32x8>::to_array(self)) }
    }
}

/// Plain Rust, for CPUs without a fused multiply-add (x86-64 before Haswell): a multiply and an
/// add, two roundings, so its output may differ from the fused kernels' by one unit in the
/// last place of an accumulator (in int16 output: at most 1 LSB, see `tests/resample.rs`).
#[derive(Clone, Copy)]
pub(super) struct Portable([f32; 8]);

impl F32x8 for Portable {
    #[inline(always)]
    unsafe fn zero() -> Self {
        Portable([0.0; 8])
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        Portable([v; 8])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the caller guarantees 8 readable floats at `p` (trait contract).
        Portable(unsafe { p.cast::<[f32; 8]>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn mul_add(self, b: Self, c: Self) -> Self {
        let mut r = [0f32; 8];
        for j in 0..8 {
            r[j] = self.0[j] * b.0[j] + c.0[j];
        }
        Portable(r)
    }
    #[inline(always)]
    unsafe fn to_array(self) -> [f32; 8] {
        self.0
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) use avx2::Avx2;
#[cfg(target_arch = "x86_64")]
pub(super) use avx512::Avx512;

/// Sixteen lanes in one AVX-512 register, for the lane layout only (the dot layout keeps
/// [`Avx2`], whose even/odd accumulator split fixes its bits). Used only after run-time
/// detection of AVX-512F (and AVX2+FMA for the dot layout).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub(in super::super) struct Avx512(__m512);

    impl super::LaneVec for Avx512 {
        const W: usize = 16;
        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: AVX-512F is present (trait contract: used only after detection).
            Avx512(unsafe { _mm512_setzero_ps() })
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            // SAFETY: as above.
            Avx512(unsafe { _mm512_set1_ps(v) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: 16 floats readable at `p` (trait contract); unaligned load; AVX-512F.
            Avx512(unsafe { _mm512_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn mul_add(self, b: Self, c: Self) -> Self {
            // `self * b + c` with one rounding, lane by lane, like `_mm256_fmadd_ps`.
            // SAFETY: AVX-512F present (trait contract).
            Avx512(unsafe { _mm512_fmadd_ps(self.0, b.0, c.0) })
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: 16 writable floats at `p` (trait contract); AVX-512F.
            unsafe { _mm512_storeu_ps(p, self.0) }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub(in super::super) struct Avx2(__m256);

    impl super::F32x8 for Avx2 {
        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: AVX is present (trait contract: used only after detection).
            Avx2(unsafe { _mm256_setzero_ps() })
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            // SAFETY: as above.
            Avx2(unsafe { _mm256_set1_ps(v) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: 8 floats readable at `p` and AVX present (trait contract).
            Avx2(unsafe { _mm256_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn mul_add(self, b: Self, c: Self) -> Self {
            // SAFETY: FMA present (trait contract).
            Avx2(unsafe { _mm256_fmadd_ps(self.0, b.0, c.0) })
        }
        #[inline(always)]
        unsafe fn to_array(self) -> [f32; 8] {
            let mut r = [0f32; 8];
            // SAFETY: `r` has room for 8 floats; AVX present.
            unsafe { _mm256_storeu_ps(r.as_mut_ptr(), self.0) };
            r
        }
    }
}

#[cfg(target_arch = "aarch64")]
pub(super) use neon::Neon;

/// Two NEON registers. NEON (Advanced SIMD) is part of the aarch64 baseline, so this needs no
/// run-time detection: every aarch64 Linux CPU has it, and `target_feature = "neon"` is on for
/// every aarch64 Rust target. The compiler does not vectorise the portable lanes' `mul_add`
/// (it emits eight scalar `fmadd`), hence this explicit path.
#[cfg(target_arch = "aarch64")]
mod neon {
    use std::arch::aarch64::*;

    #[derive(Clone, Copy)]
    pub(in super::super) struct Neon(float32x4_t, float32x4_t);

    impl super::F32x8 for Neon {
        #[inline(always)]
        unsafe fn zero() -> Self {
            // SAFETY: NEON is baseline on aarch64 (see the module docs); no memory is touched.
            unsafe { Neon(vdupq_n_f32(0.0), vdupq_n_f32(0.0)) }
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            // SAFETY: as above.
            unsafe { Neon(vdupq_n_f32(v), vdupq_n_f32(v)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller guarantees 8 readable floats at `p` (trait contract); `vld1q_f32`
            // needs no alignment beyond f32's; NEON is baseline.
            unsafe { Neon(vld1q_f32(p), vld1q_f32(p.add(4))) }
        }
        #[inline(always)]
        unsafe fn mul_add(self, b: Self, c: Self) -> Self {
            // `vfmaq_f32(c, a, b)` is `c + a * b` with one rounding, like `_mm256_fmadd_ps`.
            // SAFETY: NEON is baseline; registers only.
            unsafe { Neon(vfmaq_f32(c.0, self.0, b.0), vfmaq_f32(c.1, self.1, b.1)) }
        }
        #[inline(always)]
        unsafe fn to_array(self) -> [f32; 8] {
            let mut r = [0f32; 8];
            // SAFETY: `r` has room for 8 floats, written 4 at a time; NEON is baseline.
            unsafe {
                vst1q_f32(r.as_mut_ptr(), self.0);
                vst1q_f32(r.as_mut_ptr().add(4), self.1);
            }
            r
        }
    }
}
