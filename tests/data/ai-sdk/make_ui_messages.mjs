// How ui-messages.json and ui-messages-ai-sdk-4.json were made (tests/data/SOURCES.md), with
// the AI SDK's own functions, from a real run the vercel/ai repository recorded: a LangGraph
// ReAct agent (gpt-5) calling get_weather and get_datetime, as its UI message stream
// (packages/langchain/src/__snapshots__/react-agent-tool-calling.json) and as LangGraph's
// final state (packages/langchain/src/__fixtures__/langgraph.ts, REACT_AGENT_TOOL_CALLING).
//   npm install ai@7.0.185 && node make_ui_messages.mjs stream.json     (AI SDK 7)
//   npm install ai@4.3.19 && node make_ui_messages.mjs state.json 4     (AI SDK 4)
import fs from 'fs';
import * as ai from 'ai';

const [source, version] = process.argv.slice(2);
const prompt = "What's the weather in Tokyo and what time is it there?";
if (version !== '4') {
  // the stream's chunks read as useChat reads them; the user's message added before it
  const chunks = JSON.parse(fs.readFileSync(source, 'utf8'));
  const stream = new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(x); c.close(); } });
  let last;
  for await (const m of ai.readUIMessageStream({ stream })) last = m;
  const user = { id: '659b061c-0f61-408a-900b-0cf00e8923fb', role: 'user', parts: [{ type: 'text', text: prompt }] };
  fs.writeFileSync('ui-messages.json', JSON.stringify([user, last], null, 1));
} else {
  // the state's messages as AI SDK 4 response messages, appended as a server saves them
  const k = JSON.parse(fs.readFileSync(source, 'utf8')).messages.map(m => m.kwargs);
  const text = m => typeof m.content === 'string' ? m.content : m.content.filter(c => c.type === 'text').map(c => c.text).join('');
  const user = { id: k[0].id, role: 'user', content: k[0].content, createdAt: new Date('2025-12-16T19:00:21Z'), parts: [{ type: 'text', text: k[0].content }] };
  const responseMessages = [
    { id: k[1].id, role: 'assistant', content: k[1].tool_calls.map(tc => ({ type: 'tool-call', toolCallId: tc.id, toolName: tc.name, args: tc.args })) },
    { id: 'tool-msg', role: 'tool', content: [k[2], k[3]].map(t => ({ type: 'tool-result', toolCallId: t.tool_call_id, toolName: t.name, result: t.content })) },
    { id: k[4].id, role: 'assistant', content: [{ type: 'text', text: text(k[4]) }] },
  ];
  const out = ai.appendResponseMessages({ messages: [user], responseMessages, _internal: { currentDate: () => new Date('2025-12-16T19:00:40Z') } });
  fs.writeFileSync('ui-messages-ai-sdk-4.json', JSON.stringify(out, null, 1));
}
