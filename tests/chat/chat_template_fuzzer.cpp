// libFuzzer entry point: the input is a chat template. Parsing and rendering
// it must end in a value or an Error: no crash, no sanitizer report, no hang
// (tight render limits keep each run short).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "folio/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    auto parsed = folio::ChatTemplate::parse(source);
    if (!parsed.ok()) return 0;
    folio::ChatTemplateInputs inputs;
    inputs.messages = {{"system", "Be brief.", ""},
                       {"user", "Hi {{ x }} é", ""},
                       {"assistant", "<think>t</think>\n\nOk", "{\"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}]}"},
                       {"tool", "{\"r\": 2}", ""}};
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    inputs.extra_variables_json = "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}], \"flag\": true, \"n\": 2.5}";
    folio::ChatTemplateLimits limits;
    limits.max_output_bytes = 1 << 16;
    limits.max_loop_iterations = 20'000;
    limits.max_call_depth = 16;
    (void)parsed->render(inputs, limits);
    return 0;
}
