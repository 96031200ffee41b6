#include "folio/tokenizer.h"
#include "tokenizer/utf8.h"

namespace folio {

using tokenizer_detail::kReplacementChar;
using tokenizer_detail::next_utf8;
using tokenizer_detail::Utf8Step;

std::string StreamingDecoder::push(int32_t id) {
    if (id < 0 || id >= tokenizer_->vocab_size()) return {};
    if (skip_control_ && tokenizer_->is_control(id)) return {};
    std::string bytes = tokenizer_->token_bytes(id);
    if (first_ && !bytes.empty() && bytes[0] == ' ') {
        // decode() drops a SentencePiece prefix space on the first token; do the same.
        const int32_t one[] = {id};
        if (tokenizer_->decode(one).rfind(' ', 0) != 0) bytes.erase(0, 1);
    }
    first_ = false;
    pending_ += bytes;

    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const Utf8Step step = next_utf8(pending_, pos);
        if (step.kind == Utf8Step::Incomplete) break;  // may still complete with the next token
        if (step.kind == Utf8Step::Valid) {
            out.append(pending_, pos, step.length);
        } else {
            out += kReplacementChar;
        }
        pos += step.length;
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamingDecoder::flush() {
    std::string out = pending_.empty() ? std::string() : tokenizer_detail::repair_utf8(pending_);
    pending_.clear();
    first_ = true;
    return out;
}

}  // namespace folio
