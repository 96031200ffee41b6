#include "tokenizer/added_tokens.h"

namespace folio::tokenizer_detail {

AddedTokenMatcher::AddedTokenMatcher() {
    root_children_.fill(-1);
    nodes_.emplace_back();
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
    if (node == 0) return root_children_[byte];
    for (const auto& [b, index] : nodes_[node].children) {
        if (b == byte) return index;
    }
    return -1;
}

void AddedTokenMatcher::add(std::string_view text, int32_t token, bool control) {
    if (text.empty()) return;
    int32_t node = 0;
    for (char c : text) {
        const auto byte = static_cast<uint8_t>(c);
        int32_t next = child(node, byte);
        if (next < 0) {
            next = static_cast<int32_t>(nodes_.size());
            nodes_.emplace_back();
            if (node == 0) {
                root_children_[byte] = next;
            } else {
                nodes_[node].children.emplace_back(byte, next);
            }
        }
        node = next;
    }
    if (nodes_[node].token < 0) {  // the first token with a given text wins
        nodes_[node].token = token;
        nodes_[node].control = control;
        ++count_;
    }
}

std::vector<TextSegment> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
    std::vector<TextSegment> segments;
    size_t plain_begin = 0;
    for (size_t pos = 0; pos < text.size();) {
        int32_t best_token = -1;
        size_t best_length = 0;
        int32_t node = 0;
        for (size_t i = pos; i < text.size(); ++i) {
            node = child(node, static_cast<uint8_t>(text[i]));
            if (node < 0) break;
            const Node& n = nodes_[node];
            if (n.token >= 0 && (parse_special || !n.control)) best_token = n.token, best_length = i + 1 - pos;
        }
        if (best_token < 0) {
            ++pos;
            continue;
        }
        if (pos > plain_begin) segments.push_back({plain_begin, pos - plain_begin, -1});
        segments.push_back({pos, best_length, best_token});
        pos += best_length;
        plain_begin = pos;
    }
    if (plain_begin < text.size()) segments.push_back({plain_begin, text.size() - plain_begin, -1});
    return segments;
}

}  // namespace folio::tokenizer_detail
