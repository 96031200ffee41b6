#!/usr/bin/env python3
"""Emulates kernels/matmul_quant_mma.cu on the host, bit for bit, against the dp4a kernel's order.

For Q4_K and Q6_K, one warp's tile (16 weight rows x 8 activation rows): each
lane's registers are assembled as the kernel assembles them, the mma.sync
operands placed per the PTX fragment tables of m16n8k32 / m16n8k16 (.s8), the
integer products taken, each unit's float epilogue applied in float32, and
the lane classes summed in the bit-reversed tree (class_tree). The reference
is the warp-per-row kernel's order (lane l adds units l, l + 32, ..., then
the xor butterfly 16, 8, 4, 2, 1) over quants read from the format's
definition. All 128 outputs must have the same bits. A check of the design's
index math and sum order where no GPU is at hand, not a substitute for
running the kernel (tests/gpu/test_gpu_matmul.cpp, ctest test_gpu_matmul_mma).

    .venv/bin/python tools/emulate_mma_quant.py
"""
import sys

import numpy as np

f32 = np.float32
ROWS, N = 16, 8


def ld4(arr, off):
    return int(np.frombuffer(arr[off:off + 4].tobytes(), np.uint32)[0])


def sbyte(x):
    return x - 256 if x >= 128 else x


def byte(word, i):
    return sbyte((word >> (8 * i)) & 0xFF)


def mma(a_regs, b_regs, k):
    """C per lane [4] of an m16n8k{k} .s8 product from each lane's A and B registers."""
    A = np.zeros((16, k), np.int64)
    B = np.zeros((k, 8), np.int64)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(k // 2):  # A: 4 bytes a register; k32: (g, 4t) (g+8, 4t) (g, 16+4t) (g+8, 16+4t)
            row = g + 8 * ((i // 4) % 2)
            col = 4 * t + (i & 3) + (16 if i >= 8 else 0)
            A[row, col] = byte(a_regs[lane][i // 4], i % 4)
        for i in range(k // 4):  # B: k 4t.., then 16 + 4t..
            B[4 * t + (i & 3) + (16 if i >= 4 else 0), g] = byte(b_regs[lane][i // 4], i % 4)
    C = A @ B
    return [[int(C[g + 8 * (e >> 1), 2 * t + (e & 1)]) for e in range(4)] for g in range(8) for t in range(4)]


def butterfly(lane_sums):
    acc = list(lane_sums)
    for o in (16, 8, 4, 2, 1):
        acc = [f32(acc[l] + acc[l ^ o]) for l in range(32)]
    return acc[0]


def class_tree(leaf, depth=0, prefix=0):
    if depth == 5:
        return leaf(prefix)
    a = class_tree(leaf, depth + 1, prefix)
    b = class_tree(leaf, depth + 1, prefix | (1 << depth))
    return [[f32(a[l][e] + b[l][e]) for e in range(4)] for l in range(32)]


def activations(rng, cols):
    aq = rng.integers(-127, 128, size=(N, cols), dtype=np.int8)
    ad = rng.uniform(0.001, 0.1, size=(N, cols // 256)).astype(f32)
    bsums = aq.reshape(N, cols // 16, 16).astype(np.int32).sum(-1)
    return aq, ad, bsums


def compare(got, ref):
    bad = 0
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for e in range(4):
            if got[lane][e].tobytes() != ref(g + 8 * (e >> 1), 2 * t + (e & 1)).tobytes():
                bad += 1
    return bad


def check_q4_k(cols, seed):
    rng = np.random.default_rng(seed)
    sbs, units = cols // 256, cols // 64
    W = rng.integers(0, 256, size=(ROWS, sbs, 144), dtype=np.uint8)
    for r in range(ROWS):
        for s in range(sbs):
            W[r, s, 0:4] = np.frombuffer(rng.uniform(0.001, 0.01, 2).astype(np.float16).tobytes(), np.uint8)
    aq, ad, bsums = activations(rng, cols)

    def scales(r, sb, p):
        hdr = [int(x) for x in W[r, sb]]
        sc, mn = [], []
        for h in range(2):
            j = 2 * p + h
            if j < 4:
                sc.append(hdr[4 + j] & 63)
                mn.append(hdr[8 + j] & 63)
            else:
                sc.append((hdr[8 + j] & 0xF) | ((hdr[j] >> 6) << 4))
                mn.append((hdr[8 + j] >> 4) | ((hdr[4 + j] >> 6) << 4))
        d, dmin = np.frombuffer(W[r, sb, 0:4].tobytes(), np.float16).astype(f32)
        return sc, mn, d, dmin

    def value(r, j, u, dot_lo, dot_hi):  # pair_k_value
        sb, p = u // 4, u % 4
        sc, mn, d, dmin = scales(r, sb, p)
        b = [int(x) for x in bsums[j, 4 * u:4 * u + 4]]
        scaled = sc[0] * dot_lo + sc[1] * dot_hi
        offsets = mn[0] * (b[0] + b[1]) + mn[1] * (b[2] + b[3])
        return f32(ad[j, sb] * f32(f32(d * f32(scaled)) - f32(dmin * f32(offsets))))

    def ref(r, j):
        lanes = [f32(0)] * 32
        for l in range(32):
            for u in range(l, units, 32):
                qs = W[r, u // 4, 16 + 32 * (u % 4):16 + 32 * (u % 4) + 32].astype(np.int64)
                a = aq[j, 64 * u:64 * u + 64].astype(np.int64)
                lanes[l] = f32(lanes[l] + value(r, j, u, int((qs & 0xF) @ a[:32]), int((qs >> 4) @ a[32:])))
        return butterfly(lanes)

    def leaf(prefix):
        acc = [[f32(0)] * 4 for _ in range(32)]
        for u in range(prefix, units, 32):
            sb, p = u // 4, u % 4
            alo, ahi, blo, bhi = [], [], [], []
            for lane in range(32):
                g, t = lane // 4, lane % 4
                lo, hi = [0] * 4, [0] * 4
                for h in range(2):
                    qs = W[g + 8 * h, sb, 16 + 32 * p:]
                    for k in range(2):
                        q = ld4(qs, 16 * k + 4 * t)
                        lo[2 * k + h] = q & 0x0F0F0F0F
                        hi[2 * k + h] = (q >> 4) & 0x0F0F0F0F
                alo.append(lo)
                ahi.append(hi)
                row = aq[g, 64 * u:].view(np.uint8)
                blo.append([ld4(row, 4 * t), ld4(row, 16 + 4 * t)])
                bhi.append([ld4(row, 32 + 4 * t), ld4(row, 48 + 4 * t)])
            clo, chi = mma(alo, blo, 32), mma(ahi, bhi, 32)
            for lane in range(32):
                g, t = lane // 4, lane % 4
                for e in range(4):
                    r, j = g + 8 * (e >> 1), 2 * t + (e & 1)
                    acc[lane][e] = f32(acc[lane][e] + value(r, j, u, clo[lane][e], chi[lane][e]))
        return acc

    return compare(class_tree(leaf), ref)


def check_q6_k(cols, seed):
    rng = np.random.default_rng(seed)
    sbs, units = cols // 256, cols // 64
    QS = rng.integers(0, 256, size=(ROWS, sbs, 208), dtype=np.uint8)  # ql 128, qh 64, scales 16
    D = rng.uniform(0.001, 0.01, size=(ROWS, sbs)).astype(np.float16).astype(f32)
    aq, ad, bsums = activations(rng, cols)

    def q6(r, sb, e):  # the unsigned 6-bit quant of element e of a super-block, per the format
        h, l, grp = e // 128, e % 32, (e % 128) // 32
        ql = int(QS[r, sb, 64 * h + 32 * (grp % 2) + l])
        ql = ql & 0xF if grp < 2 else ql >> 4
        return ql | (((int(QS[r, sb, 128 + 32 * h + l]) >> (2 * grp)) & 3) << 4)

    def sc(r, sb, i):
        return sbyte(int(QS[r, sb, 192 + i]))

    def ref(r, j):
        lanes = [f32(0)] * 32
        for l in range(32):
            for u in range(l, units, 32):
                sb, h, s = u // 4, (u % 4) >> 1, u & 1
                sumi = 0
                for t in range(4):
                    base = 128 * h + 16 * s + 32 * t
                    dot = sum(q6(r, sb, base + k) * int(aq[j, sb * 256 + base + k]) for k in range(16))
                    sumi += sc(r, sb, 8 * h + s + 2 * t) * (dot - 32 * int(bsums[j, sb * 16 + 8 * h + 2 * t + s]))
                lanes[l] = f32(lanes[l] + f32(f32(ad[j, sb] * D[r, sb]) * f32(sumi)))
        return butterfly(lanes)

    def leaf(prefix):
        acc = [[f32(0)] * 4 for _ in range(32)]
        for u in range(prefix, units, 32):
            sb, hh, s = u // 4, (u % 4) >> 1, u & 1
            q = [[None, None] for _ in range(32)]
            b = []
            for lane in range(32):
                g, t = lane // 4, lane % 4
                for h in range(2):
                    blk = QS[g + 8 * h, sb]
                    lo, hi = ld4(blk, 64 * hh + 16 * s + 4 * t), ld4(blk, 64 * hh + 32 + 16 * s + 4 * t)
                    hb = ld4(blk, 128 + 32 * hh + 16 * s + 4 * t)
                    q[lane][h] = [(lo & 0x0F0F0F0F) | ((hb << 4) & 0x30303030),
                                  (hi & 0x0F0F0F0F) | ((hb << 2) & 0x30303030),
                                  ((lo >> 4) & 0x0F0F0F0F) | (hb & 0x30303030),
                                  ((hi >> 4) & 0x0F0F0F0F) | ((hb >> 2) & 0x30303030)]
                row = aq[g].view(np.uint8)
                b.append([ld4(row, sb * 256 + 128 * hh + 16 * s + 4 * t + 32 * r) for r in range(4)])
            c = [mma([[q[l][0][r], q[l][1][r]] for l in range(32)], [[b[l][r]] for l in range(32)], 16)
                 for r in range(4)]
            for lane in range(32):
                g, t = lane // 4, lane % 4
                for e in range(4):
                    row, j = g + 8 * (e >> 1), 2 * t + (e & 1)
                    sumi = sum(sc(row, sb, 8 * hh + s + 2 * r) * (c[r][lane][e] - 32 * int(bsums[j, sb * 16 + 8 * hh + 2 * r + s]))
                               for r in range(4))
                    acc[lane][e] = f32(acc[lane][e] + f32(f32(ad[j, sb] * D[row, sb]) * f32(sumi)))
        return acc

    return compare(class_tree(leaf), ref)


def main():
    failed = False
    # 768 columns: 12 units, fewer than the 32 lane classes; 3072: 48, some classes with two.
    for name, check in (("Q4_K", check_q4_k), ("Q6_K", check_q6_k)):
        for cols in (768, 3072):
            bad = check(cols, seed=cols)
            print(f"{name} {cols} columns: {bad} of 128 outputs with other bits")
            failed = failed or bad != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
