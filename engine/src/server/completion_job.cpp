#include "server/completion_job.h"

#include <algorithm>

#include "folio/chat_prompt.h"
#include "server/json_text.h"

namespace folio::server {

using nlohmann::json;

namespace {

ApiError context_error(const std::string& message, const char* param) {
    return ApiError{400, message, "invalid_request_error", param, "context_length_exceeded"};
}

}  // namespace

CompletionJob::CompletionJob(const JobContext& ctx, CompletionParams params, ResponseHeader header)
    : ctx_(ctx), params_(std::move(params)), header_(std::move(header)) {}

CompletionJob::~CompletionJob() {
    if (!finished_) abort();
}

std::unique_ptr<CompletionJob> CompletionJob::start(const JobContext& ctx, CompletionParams params,
                                                    ResponseHeader header, ApiError& error) {
    std::unique_ptr<CompletionJob> job(new CompletionJob(ctx, std::move(params), std::move(header)));
    CompletionParams& p = job->params_;
    if (p.endpoint == Endpoint::Chat) {
        auto tokens = chat_prompt_tokens(ctx.chat_template, ctx.tokenizer, p.messages);
        if (!tokens) {
            error = ApiError{400, "the messages cannot be rendered by the model's chat template: " +
                                      tokens.error().message, "invalid_request_error", "messages", "invalid_value"};
            return nullptr;
        }
        job->prompts_.push_back(std::move(*tokens));
    } else {
        for (const std::string& text : p.prompts)
            job->prompts_.push_back(ctx.tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/true));
        for (std::vector<int32_t>& ids : p.prompt_ids) {
            for (int32_t id : ids)
                if (id >= ctx.tokenizer.vocab_size()) {
                    error = ApiError{400, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                              std::to_string(ctx.tokenizer.vocab_size()), "invalid_request_error",
                                     "prompt", "invalid_value"};
                    return nullptr;
                }
            job->prompts_.push_back(std::move(ids));
        }
    }
    std::vector<Submission> batch;
    job->stream_ = std::make_shared<RequestStream>(job->prompts_.size(), p.n);
    for (size_t i = 0; i < job->prompts_.size(); ++i) {
        const int64_t length = static_cast<int64_t>(job->prompts_[i].size());
        if (length == 0) {
            error = ApiError{400, "the prompt has no tokens", "invalid_request_error", "prompt", "invalid_value"};
            return nullptr;
        }
        if (length >= ctx.context) {
            error = context_error("the prompt is " + std::to_string(length) + " tokens; the context holds " +
                                      std::to_string(ctx.context) + ", which leaves no room for a reply",
                                  p.endpoint == Endpoint::Chat ? "messages" : "prompt");
            return nullptr;
        }
        const int64_t room = ctx.context - length;
        if (p.max_tokens && *p.max_tokens > room) {
            error = context_error("max_tokens is " + std::to_string(*p.max_tokens) + " but the prompt is " +
                                      std::to_string(length) + " tokens of a context of " +
                                      std::to_string(ctx.context) + ": at most " + std::to_string(room) +
                                      " tokens can be generated",
                                  "max_tokens");
            return nullptr;
        }
        GenerationRequest r;
        r.prompt_tokens = job->prompts_[i];
        r.sampling = p.sampling;
        r.max_tokens = static_cast<int32_t>(p.max_tokens.value_or(room));
        r.n = p.n;
        r.stop = p.stop;
        r.ignore_eos = p.ignore_eos;
        batch.push_back({std::move(r), job->stream_->callback(i)});
    }
    const size_t n_choices = job->prompts_.size() * static_cast<size_t>(p.n);
    job->choices_.resize(n_choices);
    job->started_.assign(n_choices, false);
    job->text_offset_.assign(n_choices, 0);
    job->cached_tokens_.assign(job->prompts_.size(), 0);
    job->ids_ = ctx.engine.submit(std::move(batch));
    return job;
}

void CompletionJob::abort() {
    for (RequestId id : ids_) ctx_.engine.abort(id);
}

void CompletionJob::apply(const RequestStream::Update& u) {
    ChoiceOutput& c = choices_.at(static_cast<size_t>(u.choice));
    c.text += u.output.text;
    c.token_ids.insert(c.token_ids.end(), u.output.token_ids.begin(), u.output.token_ids.end());
    if (params_.logprobs) c.logprobs.insert(c.logprobs.end(), u.output.logprobs.begin(), u.output.logprobs.end());
    if (u.output.finished) {
        c.finished = true;
        c.reason = u.output.reason;
        c.error = u.output.error;
        const size_t prompt = static_cast<size_t>(u.choice / params_.n);
        cached_tokens_[prompt] = std::max(cached_tokens_[prompt], u.output.timings.cached_prompt_tokens);
    }
}

json CompletionJob::usage() const {
    int64_t prompt = 0, completion = 0, cached = 0;
    for (const auto& p : prompts_) prompt += static_cast<int64_t>(p.size());
    for (const ChoiceOutput& c : choices_) completion += static_cast<int64_t>(c.token_ids.size());
    for (int32_t c : cached_tokens_) cached += c;
    return usage_json(prompt, completion, cached);
}

bool CompletionJob::collect(json& body, ApiError& error) {
    std::vector<RequestStream::Update> updates;
    bool done = false;
    while (!done) {
        done = stream_->take(updates, std::chrono::milliseconds(200));
        for (const auto& u : updates) apply(u);
        updates.clear();
    }
    finished_ = true;
    for (const ChoiceOutput& c : choices_) {
        if (c.reason == FinishReason::Error) {
            error = ApiError{c.token_ids.empty() ? 400 : 500, c.error,
                             c.token_ids.empty() ? "invalid_request_error" : "server_error", "", ""};
            return false;
        }
        if (c.reason == FinishReason::Abort) {
            error = ApiError{503, "the request was aborted: the server is shutting down", "server_error", "",
                             "aborted"};
            return false;
        }
    }
    body = completion_body(header_, ctx_.tokenizer, choices_, usage());
    return true;
}

std::string CompletionJob::next_events(std::chrono::milliseconds timeout, bool& done) {
    std::vector<RequestStream::Update> updates;
    const bool all_done = stream_->take(updates, timeout);
    std::string text;
    for (const RequestStream::Update& u : updates) {
        const size_t i = static_cast<size_t>(u.choice);
        const size_t before_tokens = choices_[i].token_ids.size();
        apply(u);
        const RequestOutput& out = u.output;
        const bool has_text = !out.text.empty() || !started_[i];
        if (has_text || (!out.token_ids.empty() && params_.logprobs)) {
            json logprobs = nullptr;
            if (params_.logprobs && !out.token_ids.empty())
                logprobs = logprobs_json(header_, ctx_.tokenizer, out.token_ids,
                                         std::span(choices_[i].logprobs).subspan(std::min(before_tokens, choices_[i].logprobs.size())),
                                         text_offset_[i]);
            text += sse_event(stream_chunk(header_, u.choice, out.text, !started_[i], std::move(logprobs), nullptr,
                                           params_.include_usage));
            started_[i] = true;
            text_offset_[i] += out.text.size();
        }
        if (out.finished) {
            if (out.reason == FinishReason::Error)
                text += sse_event(json::parse(error_body(ApiError{500, out.error, "server_error", "", ""})));
            text += sse_event(stream_chunk(header_, u.choice, "", false, nullptr, &out.reason, params_.include_usage));
        }
    }
    done = all_done;
    if (all_done) {
        finished_ = true;
        if (params_.include_usage) text += sse_event(usage_chunk(header_, usage()));
        text += kSseDone;
    }
    return text;
}

}  // namespace folio::server
