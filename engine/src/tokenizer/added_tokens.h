// Finds control and user-defined tokens ("<|im_start|>", "<end_of_turn>",
// "\n\n") in raw text before the BPE model runs, leftmost-longest as Hugging
// Face's AddedVocabulary does, so that their text is never cut into pieces.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace folio::tokenizer_detail {

struct TextSegment {
    size_t offset;
    size_t length;
    int32_t token;  // the added token this segment spells, or -1 for text the model tokenizes
};

class AddedTokenMatcher {
public:
    AddedTokenMatcher();
    // `control` tokens are skipped when matching without parse_special.
    void add(std::string_view text, int32_t token, bool control);
    bool empty() const { return count_ == 0; }

    std::vector<TextSegment> split(std::string_view text, bool parse_special) const;

private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node index
        int32_t token = -1;
        bool control = false;
    };
    int32_t child(int32_t node, uint8_t byte) const;
    std::vector<Node> nodes_;
    std::array<int32_t, 256> root_children_;  // the root is hit at every byte: direct lookup
    size_t count_ = 0;
};

}  // namespace folio::tokenizer_detail
