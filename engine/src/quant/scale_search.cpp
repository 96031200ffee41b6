// The K-quant scale searches (see scale_search.h). Each accumulation runs in
// index order and each product is written in the order GGML evaluates it:
// the integers chosen depend on the last bit of these sums.
#include "quant/scale_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace folio::quant {

namespace {

// Below this a group is all zeros (GGML's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Weighted squared error of the levels `L` as scale * L + min.
float offset_fit_error(int n, const float* x, const float* w, const uint8_t* L, float scale, float min) {
    float error = 0;
    for (int i = 0; i < n; ++i) {
        float diff = scale * L[i] + min - x[i];
        diff = diff * diff;
        error += w[i] * diff;
    }
    return error;
}

}  // namespace

float search_offset_scale(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* offset,
                          float rmin, float rdelta, int nstep) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;  // the offset only ever lowers the grid
    if (max <= min) {
        std::fill(L, L + n, uint8_t{0});
        *offset = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    float best_error = offset_fit_error(n, x, weights, L, scale, min);

    uint8_t trial[256];
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * step + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            trial[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        // Weighted least squares for x ~ a * l + b over the trial levels.
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float fit_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float fit_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (fit_min > 0) {  // an offset above zero cannot be stored: refit through 0
            fit_min = 0;
            fit_scale = sum_xl / sum_l2;
        }
        const float error = offset_fit_error(n, x, weights, trial, fit_scale, fit_min);
        if (error < best_error) {
            std::copy(trial, trial + n, L);
            best_error = error;
            scale = fit_scale;
            min = fit_min;
        }
    }
    *offset = -min;
    return scale;
}

float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L, const float* weights) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t{0});
        return 0.f;
    }
    auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
    auto weight = [&](int i) { return weights ? weights[i] : x[i] * x[i]; };

    float iscale = -nmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = level(iscale, i);
        L[i] = int8_t(l + nmax);
        const float w = weight(i);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;  // the fit's explained energy: larger is better
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(nmax + 0.1f * step) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = level(iscale, i);
            const float w = weight(i);
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + level(iscale, i));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float search_positive_scale(int n, int nmax, const float* x, uint8_t* L, const float* weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < kGroupMaxEps) {
        std::fill(L, L + n, uint8_t{0});
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
    float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * L[i];
        best_mse += weights[i] * diff * diff;
    }
    for (int step = -4; step <= 4; ++step) {
        if (step == 0) continue;
        const float trial_iscale = (0.1f * step + nmax) / max;
        const float trial_scale = 1 / trial_iscale;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(trial_iscale * x[i]));
            const float diff = x[i] - trial_scale * l;
            mse += weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = trial_iscale;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = uint8_t(l);
        sumlx += weights[i] * x[i] * l;
        suml2 += weights[i] * l * l;
    }
    // Coordinate descent: move one level at a time while the fit improves.
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = weights[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (!(slx > 0 && sl2 > 0)) continue;
            const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
            if (new_l == L[i]) continue;
            slx += w * x[i] * new_l;
            sl2 += w * new_l * new_l;
            if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = uint8_t(new_l);
                sumlx = slx;
                suml2 = sl2;
                ++changed;
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace folio::quant
