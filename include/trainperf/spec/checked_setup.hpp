// A training setup that passed validate(training_setup), and the type every prediction
// takes. Only a check makes one, so what takes it never checks again.
//
//   checked_setup  owns a checked copy (what the CLI builds, what a search holds);
//   checked_view   refers to one: a prediction's parameter. Made from a training_setup
//                  it checks it in place (so predict(setup) checks once, copying
//                  nothing); made from a checked_setup it checks nothing. Like
//                  std::string_view it must not outlive what it refers to: hold a
//                  checked_setup instead.
#pragma once

#include <utility>

#include "optimizer.hpp"
#include "parallel.hpp"
#include "setup.hpp"

namespace trainperf {

class checked_view;

class checked_setup {
public:
    // Validates `s` (throws trainperf::invalid_argument naming the first wrong field).
    constexpr explicit checked_setup(training_setup s) : s_(std::move(s)) { validate(s_); }

    constexpr const training_setup& get() const noexcept { return s_; }
    constexpr const training_setup& operator*() const noexcept { return s_; }
    constexpr const training_setup* operator->() const noexcept { return &s_; }
    // Read-only, it is a training_setup wherever one is read.
    constexpr operator const training_setup&() const noexcept { return s_; }

    // The same setup with another layout: only what depends on the layout is checked
    // again (validate_layout), the rest passed already.
    constexpr checked_setup with_layout(const parallel_layout& l) const;

private:
    friend class checked_view;
    struct trusted {};
    constexpr checked_setup(training_setup s, trusted) : s_(std::move(s)) {}

    training_setup s_;
};

class checked_view {
public:
    // Checks `s` in place (throws trainperf::invalid_argument naming the first wrong field).
    constexpr checked_view(const training_setup& s) : s_(&s) { validate(s); }  // NOLINT: implicit by design
    constexpr checked_view(const checked_setup& s) noexcept : s_(&s.s_) {}       // NOLINT: checked already

    constexpr const training_setup& get() const noexcept { return *s_; }
    constexpr const training_setup& operator*() const noexcept { return *s_; }
    constexpr const training_setup* operator->() const noexcept { return s_; }
    constexpr operator const training_setup&() const noexcept { return *s_; }

    // A checked copy with another layout, only the layout checked again.
    constexpr checked_setup with_layout(const parallel_layout& l) const {
        checked_setup c(*s_, checked_setup::trusted{});
        c.s_.layout = l;
        validate_layout(c.s_);
        return c;
    }

private:
    const training_setup* s_;
};

constexpr checked_setup checked_setup::with_layout(const parallel_layout& l) const {
    return checked_view(*this).with_layout(l);
}

// What the setup's model and optimizer hold whatever the layout. Fine-tuning with
// adapters trains only them: the optimizer state is theirs (fp32, spec/finetune.hpp), and
// the trainable parameters and tensors are the adapters' A and B of every layer.
constexpr model_state model_state_of(checked_view c) {
    const training_setup& s = c;
    model_state r = optimizer_detail::model_state_of(s.optimizer, s.model, s.precision.optimizer_state);
    if (s.finetune.freezes_base()) {
        r.trainable_parameters = adapter_parameters(s.model, s.finetune);
        r.trainable_tensors = 2 * s.model.layers * adapted_matrices_per_layer(s.model, s.finetune);
        r.optimizer_state = adapter_optimizer_state_bytes(s.optimizer, s.model, s.finetune);
    }
    return r;
}

}  // namespace trainperf
