// From one predicted step to a whole training run: time, GPU-hours, energy and cost
// to train on a number of tokens.
#pragma once

#include <boost/units/systems/si/energy.hpp>
#include <boost/units/systems/si/power.hpp>
#include <boost/units/systems/si/time.hpp>

#include <string>
#include <string_view>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "step.hpp"

namespace trainperf {

using joules = boost::units::quantity<boost::units::si::energy, double>;
using watts = boost::units::quantity<boost::units::si::power, double>;

constexpr double joules_per_kwh = 3.6e6;

inline constexpr double seconds_per_day = 86400.0;

struct training_run {
    double tokens = 0;
    seconds time = seconds_of(0.0);   // wall clock
    double gpu_hours = 0;
    joules energy{};                  // GPUs at board power (TDP) for the whole run: an upper bound
    double cost = 0;                  // gpu_hours × price per GPU-hour, in `currency`
    std::string currency;             // the price's ISO 4217 code; empty without a price

    constexpr double days() const { return time.value() / seconds_per_day; }
};

// An ISO 4217 currency code has the shape of three upper-case letters (USD, EUR, JPY);
// which codes exist is not checked.
constexpr bool is_currency_code(std::string_view code) {
    if (code.size() != 3) return false;
    for (char c : code)
        if (c < 'A' || c > 'Z') return false;
    return true;
}

inline void validate_currency(std::string_view code) {
    require(is_currency_code(code), "currency", code, "must be an ISO 4217 code, three upper-case letters (USD, EUR)");
}

// `price_per_gpu_hour` may be 0 (no cost wanted); `currency` names its currency.
inline training_run estimate_training_run(const step_report& step, const gpu_spec& gpu, double tokens,
                                          double price_per_gpu_hour = 0.0, std::string_view currency = "USD") {
    require(tokens > 0 && tokens < 1e18, "train_tokens", tokens, "must be a positive token count");
    require(price_per_gpu_hour >= 0 && price_per_gpu_hour < 1e9, "price_per_gpu_hour", price_per_gpu_hour,
            "must be finite and not negative");
    validate_currency(currency);
    require(step.tokens_per_second > 0, "tokens_per_second", step.tokens_per_second, "must be positive");
    training_run run;
    run.tokens = tokens;
    run.time = seconds_of(tokens / step.tokens_per_second);
    run.gpu_hours = run.time.value() / 3600.0 * step.gpus;
    const watts board = watts::from_value(gpu.tdp_watts * step.gpus);
    run.energy = board * boost::units::quantity<boost::units::si::time, double>::from_value(run.time.value());
    run.cost = run.gpu_hours * price_per_gpu_hour;
    if (price_per_gpu_hour > 0) run.currency = currency;
    return run;
}

}  // namespace trainperf
