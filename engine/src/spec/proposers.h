// The proposers behind make_proposer (folio/spec.h), one file each.
#pragma once

#include <memory>

#include "folio/spec.h"

namespace folio {

// draft_model_proposer.cpp: Draft and LayerSkip, greedy K steps on `draft`.
std::unique_ptr<Proposer> make_draft_model_proposer(const SpecConfig& config, Backend& draft);

}  // namespace folio
