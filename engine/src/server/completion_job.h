// One completions request between validation and its answer: the prompts'
// tokens, the engine requests submitted for them, and what they produced.
// A job is answered whole (collect(): the response body) or as server-sent
// events (next_events(): the chunks that are ready), and abort() ends its
// engine requests wherever they are, which frees their KV blocks.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "folio/chat_template.h"
#include "folio/engine.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_stream.h"

namespace folio::server {

// What a job needs to know about the engine it runs on.
struct JobContext {
    Engine& engine;
    const Tokenizer& tokenizer;
    const ChatTemplate& chat_template;
    int32_t context = 0;  // the longest sequence the engine runs
};

class CompletionJob {
public:
    // Tokenizes and checks the prompts against the context (400 when they
    // or max_tokens do not fit), then submits them. `header` names the response.
    static std::unique_ptr<CompletionJob> start(const JobContext& ctx, CompletionParams params, ResponseHeader header,
                                                ApiError& error);
    ~CompletionJob();

    const std::vector<RequestId>& request_ids() const { return ids_; }
    void abort();

    // Waits for every choice to finish; the response body, or the error to answer with.
    bool collect(nlohmann::json& body, ApiError& error);
    // Stream: the SSE text that is ready (waiting up to `timeout` when none is);
    // `done` once the last of it ([DONE] included) is in the text.
    std::string next_events(std::chrono::milliseconds timeout, bool& done);

private:
    CompletionJob(const JobContext& ctx, CompletionParams params, ResponseHeader header);
    void apply(const RequestStream::Update& update);  // into choices_ and the usage counts
    nlohmann::json usage() const;

    JobContext ctx_;
    CompletionParams params_;
    ResponseHeader header_;
    std::vector<std::vector<int32_t>> prompts_;  // tokens per prompt
    std::shared_ptr<RequestStream> stream_;
    std::vector<RequestId> ids_;
    std::vector<ChoiceOutput> choices_;
    std::vector<bool> started_;          // stream: the first chunk of each choice went out
    std::vector<size_t> text_offset_;    // stream: bytes of each choice sent so far (completions' text_offset)
    std::vector<int32_t> cached_tokens_;  // per prompt, from the prefix cache
    bool finished_ = false;
};

}  // namespace folio::server
