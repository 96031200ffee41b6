// The server's request parsing and response shapes without a model or a
// socket: every field of a completions request read and checked (wrong
// types, out-of-range values, malformed JSON get a 400 naming the field),
// the error object's shape, usage and logprobs in each endpoint's form, and
// RequestStream's rule for when a request of n samples is done.
#include <folio_test.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../tokenizer/tiny_vocab.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_stream.h"

using folio::FinishReason;
using folio::server::ApiError;
using folio::server::CompletionParams;
using folio::server::Endpoint;
using nlohmann::json;

namespace {

std::optional<ApiError> chat(const std::string& body, CompletionParams& out) {
    return folio::server::parse_completion_request(body, Endpoint::Chat, out);
}

// The error a body gets, or an ApiError with status 0 when it parses.
ApiError chat_error(const std::string& body) {
    CompletionParams p;
    auto e = chat(body, p);
    return e ? *e : ApiError{0, "", "", "", ""};
}

ApiError completion_error(const std::string& body) {
    CompletionParams p;
    auto e = folio::server::parse_completion_request(body, Endpoint::Completion, p);
    return e ? *e : ApiError{0, "", "", "", ""};
}

const char* kHello = R"("messages": [{"role": "user", "content": "hi"}])";

std::string with(const std::string& fields) { return std::string("{") + kHello + ", " + fields + "}"; }

folio::RequestOutput output(int32_t index, bool finished, FinishReason reason = FinishReason::Stop) {
    folio::RequestOutput out;
    out.index = index;
    out.finished = finished;
    out.reason = reason;
    out.text = "x";
    return out;
}

}  // namespace

class OpenAiRequestTest : public QObject {
    Q_OBJECT
private slots:
    void chatRequestReadsEveryField() {
        CompletionParams p;
        const auto e = chat(with(R"("model": "m", "n": 2, "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
            "seed": 42, "frequency_penalty": 0.5, "presence_penalty": -0.5, "stop": ["a", "b"],
            "logprobs": true, "top_logprobs": 3, "stream": true, "stream_options": {"include_usage": true})"),
                            p);
        QVERIFY2(!e, e ? e->message.c_str() : "");
        QCOMPARE(p.model, std::string("m"));
        QCOMPARE(p.messages.size(), size_t(1));
        QCOMPARE(p.messages[0].role, std::string("user"));
        QCOMPARE(p.messages[0].content, std::string("hi"));
        QCOMPARE(p.n, 2);
        QCOMPARE(*p.max_tokens, int64_t(7));
        QCOMPARE(p.sampling.temperature, 0.5f);
        QCOMPARE(p.sampling.top_p, 0.9f);
        QCOMPARE(p.sampling.seed, uint64_t(42));
        QCOMPARE(p.sampling.frequency_penalty, 0.5f);
        QCOMPARE(p.sampling.presence_penalty, -0.5f);
        QCOMPARE(p.stop.size(), size_t(2));
        QVERIFY(p.logprobs);
        QCOMPARE(p.top_logprobs, 3);
        QCOMPARE(p.sampling.n_logprobs, 3);
        QVERIFY(p.stream);
        QVERIFY(p.include_usage);
    }

    void defaultsAreOpenAis() {
        CompletionParams p;
        QVERIFY(!chat(with(R"("stop": "END", "max_completion_tokens": 5, "tools": [], "logit_bias": {},
                               "response_format": {"type": "text"}, "user": "u")"), p));
        QCOMPARE(p.sampling.temperature, 1.0f);
        QCOMPARE(p.sampling.top_k, 0);
        QCOMPARE(p.sampling.top_p, 1.0f);
        QCOMPARE(p.sampling.min_p, 0.0f);
        QCOMPARE(p.sampling.n_logprobs, 0);
        QCOMPARE(p.stop, std::vector<std::string>{"END"});
        QCOMPARE(*p.max_tokens, int64_t(5));
        QVERIFY(!p.stream);
        QCOMPARE(p.n, 1);
    }

    void contentPartsAndRolesAreRead() {
        CompletionParams p;
        QVERIFY(!chat(R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"},
            {"type": "text", "text": "b"}]}, {"role": "assistant", "content": null}, {"role": "user", "content": "q"}]})",
                      p));
        QCOMPARE(p.messages.size(), size_t(3));
        QCOMPARE(p.messages[0].role, std::string("system"));
        QCOMPARE(p.messages[0].content, std::string("ab"));
        QCOMPARE(p.messages[1].content, std::string());
    }

    void malformedBodiesGet400() {
        for (const char* body : {"", "{", "not json", "[1, 2]", "\"text\"", "{\"messages\": [}", "null"}) {
            const ApiError e = chat_error(body);
            QCOMPARE(e.status, 400);
            QCOMPARE(e.code, std::string("invalid_json"));
        }
        std::string deep(100, '[');
        QCOMPARE(chat_error("{\"messages\": " + deep + "}").status, 400);
    }

    void wrongTypesNameTheField() {
        const std::pair<std::string, std::string> cases[] = {
            {R"({"messages": "hi"})", "messages"},
            {R"({"messages": []})", "messages"},
            {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
            {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
            {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
            {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type"},
            {R"({"model": 3, "messages": [{"role": "user", "content": "x"}]})", "model"},
            {with(R"("n": "2")"), "n"},
            {with(R"("n": 1.5)"), "n"},
            {with(R"("max_tokens": "10")"), "max_tokens"},
            {with(R"("temperature": "hot")"), "temperature"},
            {with(R"("stream": 1)"), "stream"},
            {with(R"("stop": 5)"), "stop"},
            {with(R"("stop": ["a", 5])"), "stop[1]"},
            {with(R"("logprobs": 1)"), "logprobs"},
            {with(R"("stream_options": {"include_usage": true})"), "stream_options"},
            {with(R"("stream": true, "stream_options": 3)"), "stream_options"},
            {with(R"("tools": [{"type": "function", "function": {"name": "f"}}])"), "tools"},
            {with(R"("logit_bias": {"42": 100})"), "logit_bias"},
            {with(R"("response_format": {"type": "json_object"})"), "response_format"},
        };
        for (const auto& [body, param] : cases) {
            const ApiError e = chat_error(body);
            QVERIFY2(e.status == 400, body.c_str());
            QVERIFY2(e.param == param, (body + " -> param '" + e.param + "', want '" + param + "'").c_str());
            QVERIFY(!e.message.empty());
        }
    }

    void valuesOutOfRangeAreRefused() {
        const std::pair<std::string, std::string> cases[] = {
            {with(R"("n": 0)"), "n"},
            {with(R"("n": -1)"), "n"},
            {with(R"("n": 1000)"), "n"},
            {with(R"("max_tokens": 0)"), "max_tokens"},
            {with(R"("max_tokens": -5)"), "max_tokens"},
            {with(R"("max_tokens": 99999999999999)"), "max_tokens"},
            {with(R"("max_tokens": 1e300)"), "max_tokens"},
            {with(R"("temperature": -1)"), "temperature"},
            {with(R"("temperature": 3)"), "temperature"},
            {with(R"("top_p": 0)"), "top_p"},
            {with(R"("top_p": 1.5)"), "top_p"},
            {with(R"("seed": -3)"), "seed"},
            {with(R"("frequency_penalty": 2.5)"), "frequency_penalty"},
            {with(R"("presence_penalty": -9)"), "presence_penalty"},
            {with(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs"},
            {with(R"("top_logprobs": 2)"), "top_logprobs"},
            {with(R"("stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"])"), "stop"},
        };
        for (const auto& [body, param] : cases) {
            const ApiError e = chat_error(body);
            QVERIFY2(e.status == 400, body.c_str());
            QVERIFY2(e.param == param, (body + " -> param '" + e.param + "', want '" + param + "'").c_str());
        }
    }

    void completionPromptsInEveryForm() {
        CompletionParams p;
        QVERIFY(!folio::server::parse_completion_request(R"({"prompt": "once", "logprobs": 2})", Endpoint::Completion, p));
        QCOMPARE(p.prompts, std::vector<std::string>{"once"});
        QVERIFY(p.logprobs);
        QCOMPARE(p.top_logprobs, 2);
        QVERIFY(!folio::server::parse_completion_request(R"({"prompt": ["a", "b"], "n": 3})", Endpoint::Completion, p));
        QCOMPARE(p.prompts.size(), size_t(2));
        QVERIFY(!folio::server::parse_completion_request(R"({"prompt": [1, 2, 3]})", Endpoint::Completion, p));
        QCOMPARE(p.prompt_ids, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
        QVERIFY(!folio::server::parse_completion_request(R"({"prompt": [[1], [2, 3]]})", Endpoint::Completion, p));
        QCOMPARE(p.prompt_ids.size(), size_t(2));
        QCOMPARE(completion_error(R"({})").param, std::string("prompt"));
        QCOMPARE(completion_error(R"({"prompt": 5})").param, std::string("prompt"));
        QCOMPARE(completion_error(R"({"prompt": [1, -2]})").param, std::string("prompt[1]"));
        QCOMPARE(completion_error(R"({"prompt": ["a", 3]})").param, std::string("prompt[1]"));
        QCOMPARE(completion_error(R"({"prompt": "a", "echo": true})").param, std::string("echo"));
        QCOMPARE(completion_error(R"({"prompt": ["a","b","c","d","e"], "n": 64})").param, std::string("n"));
    }

    void tokenizeAndDetokenizeBodies() {
        folio::server::TokenizeParams t;
        QVERIFY(!folio::server::parse_tokenize_request(R"({"content": "hi", "with_pieces": true})", t));
        QCOMPARE(t.content, std::string("hi"));
        QVERIFY(t.with_pieces);
        QVERIFY(!t.add_special);
        QCOMPARE(folio::server::parse_tokenize_request(R"({"content": 1})", t)->param, std::string("content"));
        std::vector<int32_t> ids;
        QVERIFY(!folio::server::parse_detokenize_request(R"({"tokens": [1, 2]})", 10, ids));
        QCOMPARE(ids, (std::vector<int32_t>{1, 2}));
        QCOMPARE(folio::server::parse_detokenize_request(R"({"tokens": [10]})", 10, ids)->param, std::string("tokens[0]"));
        QCOMPARE(folio::server::parse_detokenize_request(R"({"tokens": [-1]})", 10, ids)->status, 400);
        QCOMPARE(folio::server::parse_detokenize_request(R"({"tokens": "12"})", 10, ids)->param, std::string("tokens"));
    }

    void errorBodyHasOpenAisShape() {
        const json e = json::parse(folio::server::error_body({400, "bad \xff value", "invalid_request_error", "n", ""}));
        QVERIFY(e.contains("error"));
        QCOMPARE(e["error"]["type"].get<std::string>(), std::string("invalid_request_error"));
        QCOMPARE(e["error"]["param"].get<std::string>(), std::string("n"));
        QVERIFY(e["error"]["code"].is_null());
        QVERIFY(e["error"]["message"].get<std::string>().starts_with("bad "));  // invalid UTF-8 replaced, not thrown
    }

    void responsesCarryUsageAndLogprobs() {
        auto tokenizer = folio::Tokenizer::create(tiny_vocab::byte_level());
        QVERIFY(tokenizer.ok());
        folio::server::ResponseHeader h{Endpoint::Chat, "chatcmpl-1", 5, "m", true, 2};
        folio::server::ChoiceOutput c;
        c.text = "ab";
        c.token_ids = {'a', 'b'};
        c.logprobs.resize(2);
        c.logprobs[0].logprob = -0.5f;
        c.logprobs[0].top = {{'a', -0.5f}, {'c', -1.5f}, {'d', -2.0f}};
        c.logprobs[1].logprob = -0.25f;
        c.finished = true;
        c.reason = FinishReason::StopString;
        const json usage = folio::server::usage_json(10, 2, 8);
        json body = folio::server::completion_body(h, *tokenizer, std::span(&c, 1), usage);
        QCOMPARE(body["object"].get<std::string>(), std::string("chat.completion"));
        QCOMPARE(body["choices"][0]["message"]["content"].get<std::string>(), std::string("ab"));
        QCOMPARE(body["choices"][0]["finish_reason"].get<std::string>(), std::string("stop"));
        QCOMPARE(body["usage"]["total_tokens"].get<int>(), 12);
        QCOMPARE(body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 8);
        const json& lp = body["choices"][0]["logprobs"]["content"];
        QCOMPARE(lp.size(), size_t(2));
        QCOMPARE(lp[0]["token"].get<std::string>(), std::string("a"));
        QCOMPARE(lp[0]["logprob"].get<float>(), -0.5f);
        QCOMPARE(lp[0]["top_logprobs"].size(), size_t(2));  // top_logprobs = 2 of the 3 given
        QCOMPARE(lp[0]["top_logprobs"][1]["token"].get<std::string>(), std::string("c"));

        h.endpoint = Endpoint::Completion;
        body = folio::server::completion_body(h, *tokenizer, std::span(&c, 1), usage);
        QCOMPARE(body["object"].get<std::string>(), std::string("text_completion"));
        QCOMPARE(body["choices"][0]["text"].get<std::string>(), std::string("ab"));
        const json& clp = body["choices"][0]["logprobs"];
        QCOMPARE(clp["tokens"][1].get<std::string>(), std::string("b"));
        QCOMPARE(clp["text_offset"][1].get<int>(), 1);
        QCOMPARE(clp["top_logprobs"][0]["c"].get<float>(), -1.5f);

        h.endpoint = Endpoint::Chat;
        const FinishReason length = FinishReason::Length;
        const json chunk = folio::server::stream_chunk(h, 1, "hey", true, nullptr, &length, true);
        QCOMPARE(chunk["object"].get<std::string>(), std::string("chat.completion.chunk"));
        QCOMPARE(chunk["choices"][0]["index"].get<int>(), 1);
        QCOMPARE(chunk["choices"][0]["delta"]["role"].get<std::string>(), std::string("assistant"));
        QCOMPARE(chunk["choices"][0]["delta"]["content"].get<std::string>(), std::string("hey"));
        QCOMPARE(chunk["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
        QVERIFY(chunk.contains("usage") && chunk["usage"].is_null());
        QVERIFY(folio::server::sse_event(chunk).starts_with("data: {"));
        QVERIFY(folio::server::sse_event(chunk).ends_with("}\n\n"));
    }

    void requestStreamIsDoneWhenEverySampleIs() {
        // Two prompts of n = 2: four choices, numbered prompt * n + sample.
        auto stream = std::make_shared<folio::server::RequestStream>(2, 2);
        auto first = stream->callback(0), second = stream->callback(1);
        std::vector<folio::server::RequestStream::Update> got;
        first(output(0, false));
        first(output(1, false));
        second(output(0, true));
        QVERIFY(!stream->take(got, std::chrono::milliseconds(1)));
        QCOMPARE(got.size(), size_t(3));
        QCOMPARE(got[2].choice, 2);
        first(output(0, true));
        first(output(1, true));
        QVERIFY(!stream->take(got, std::chrono::milliseconds(1)));  // prompt 1's second sample is still out
        second(output(1, true));
        QVERIFY(stream->take(got, std::chrono::milliseconds(1)));
        QCOMPARE(got.back().choice, 3);

        // Aborted before its first token, a request of n = 3 never forks: its one output ends it.
        auto early = std::make_shared<folio::server::RequestStream>(1, 3);
        early->callback(0)(output(0, true, FinishReason::Abort));
        got.clear();
        QVERIFY(early->take(got, std::chrono::milliseconds(1)));
        // But an abort of a sample whose siblings have streamed waits for them.
        auto forked = std::make_shared<folio::server::RequestStream>(1, 2);
        auto cb = forked->callback(0);
        cb(output(0, false));
        cb(output(1, false));
        cb(output(0, true, FinishReason::Abort));
        QVERIFY(!forked->take(got, std::chrono::milliseconds(1)));
        cb(output(1, true, FinishReason::Abort));
        QVERIFY(forked->take(got, std::chrono::milliseconds(1)));
    }
};

FOLIO_TEST_MAIN(OpenAiRequestTest)
#include "test_openai_request.moc"
