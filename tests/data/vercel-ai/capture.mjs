// How the files beside this one were written: the Vercel AI SDK's own telemetry of two
// generateText runs (a mock model from `ai/test`, two tools; the second run's first `convert`
// call throws and the model calls it again), exported by OpenTelemetry JS as OTLP JSON (its
// JsonTraceSerializer: what the OTLP/HTTP exporter sends a Collector), one request of at
// most four spans a line. AI SDK 5 names its spans and attributes `ai.*`
// (`experimental_telemetry`); AI SDK 7 moved telemetry to @ai-sdk/otel, which writes the GenAI
// conventions. Not run by the tests (Node is not a dependency of tracegrade).
//
// Run with Node 20, in an empty folder:
//
//   npm install ai@5.0.277 zod@4.6.7 @opentelemetry/api@1.9.1 \
//     @opentelemetry/sdk-trace-base@2.12.1 @opentelemetry/resources@2.12.1 \
//     @opentelemetry/context-async-hooks@2.12.1 @opentelemetry/otlp-transformer@0.223.1
//   node capture.mjs ai-5.0.277.jsonl
//   npm install ai@7.0.185 @ai-sdk/otel@1.0.185
//   node capture.mjs ai-7.0.185.jsonl
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import * as ai from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";

const version = createRequire(import.meta.url)("ai/package.json").version;
const v5 = version.startsWith("5.");

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "weather-app" }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
const tracer = provider.getTracer("ai");
if (!v5) {
  const { OpenTelemetry } = await import("@ai-sdk/otel");
  ai.registerTelemetry(new OpenTelemetry({ tracer, agentSpanName: "functionId" }));
}

// the model's result as its specification version has it (v2: AI SDK 5; v4: AI SDK 7)
const usage = v5
  ? { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
  : {
      inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 5, text: 5, reasoning: 0 },
    };
const finish = (reason) => (v5 ? reason : { unified: reason, raw: reason });
const call = (id, name, input) => ({
  content: [{ type: "tool-call", toolCallId: id, toolName: name, input: JSON.stringify(input) }],
  finishReason: finish("tool-calls"),
  usage,
  warnings: [],
});
const text = (value) => ({
  content: [{ type: "text", text: value }],
  finishReason: finish("stop"),
  usage,
  warnings: [],
});

const tools = {
  get_weather: ai.tool({
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `21 C, sunny in ${city}`,
  }),
  convert: ai.tool({
    description: "Degrees Celsius in Fahrenheit.",
    inputSchema: z.object({ celsius: z.string() }),
    execute: async ({ celsius }) => {
      const value = Number(celsius);
      if (Number.isNaN(value)) throw new Error("celsius must be a number");
      return (value * 9) / 5 + 32;
    },
  }),
};

for (const [city, fail] of [["Paris", false], ["Oslo", true]]) {
  const script = [
    call("c1", "get_weather", { city }),
    ...(fail ? [call("c2", "convert", { celsius: "abc" })] : []),
    call("c3", "convert", { celsius: "21" }),
    text(`It is 21 C (69.8 F) in ${city}.`),
  ];
  const Mock = v5 ? aiTest.MockLanguageModelV2 : aiTest.MockLanguageModelV4;
  const model = new Mock({
    provider: "mock",
    modelId: "mock-model",
    doGenerate: async () => script.shift(),
  });
  await ai.generateText({
    model,
    system: "You answer weather questions with the tools.",
    prompt: `What is the weather in ${city}, in Fahrenheit?`,
    tools,
    stopWhen: ai.stepCountIs(6),
    ...(v5
      ? { experimental_telemetry: { isEnabled: true, functionId: "weather-agent", tracer } }
      : { telemetry: { functionId: "weather-agent" } }),
  });
}
const spans = exporter.getFinishedSpans();
const lines = [];
for (let at = 0; at < spans.length; at += 4) {
  const request = JsonTraceSerializer.serializeRequest(spans.slice(at, at + 4));
  lines.push(new TextDecoder().decode(request));
}
writeFileSync(process.argv[2], lines.join("\n") + "\n");
console.log(`ai ${version}: ${spans.length} spans, ${lines.length} lines`);
