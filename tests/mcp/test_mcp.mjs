// memsnap mcp through the official MCP TypeScript SDK's client (run by tests/mcp/run.py from its
// npm install, in the source tree): it spawns `memsnap mcp --allow testdata`, lists the tools,
// calls each on fixtures, validates every result against the tool's output schema (the client
// does on each call; the test checks that it would refuse a wrong document) and compares it with
// the command line's JSON for the same question. Then the errors, each followed by a request
// that must still be answered: a path outside --allow, through `..` and through a symbolic link;
// bad arguments; an unknown tool; raw lines that are not JSON-RPC; a 32 MiB line, refused without
// being held; a cancelled call; and nothing but protocol messages on stdout.
// Usage: node test_mcp.mjs MEMSNAP (the working directory holds testdata/).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import { spawn, spawnSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const MEMSNAP = process.argv[2];
const failures = [];
const t0 = Date.now();
const mark = what => console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
let passed = 0;
function check(name, cond, detail = '') {
  if (cond) passed++;
  else failures.push(`${name}: ${typeof detail === 'string' ? detail : JSON.stringify(detail).slice(0, 600)}`);
}

// The command line's answer to the same question: its JSON document (flame: its folded text).
function cli(args) {
  const p = spawnSync(MEMSNAP, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  return { status: p.status, stdout: p.stdout, stderr: p.stderr };
}
function cliJson(args) {
  const p = cli(args);
  try {
    return JSON.parse(p.stdout);
  } catch {
    return { unparsable: p.stdout.slice(0, 200), stderr: p.stderr };
  }
}
const real = f => fs.realpathSync(f);
const fixture = name => real(path.join('testdata', 'snapgen', name));

// Where two documents first differ, for the message.
function firstDifference(a, b, at = '') {
  if (isDeepStrictEqual(a, b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${at}.${k}`);
      if (d) return d;
    }
  }
  return `${at}: ${JSON.stringify(a)?.slice(0, 120)} vs ${JSON.stringify(b)?.slice(0, 120)}`;
}

// ---- the SDK's client -----------------------------------------------------------------------
const stderrLines = [];
const transport = new StdioClientTransport({ command: MEMSNAP, args: ['mcp', '--allow', 'testdata'], stderr: 'pipe' });
transport.stderr?.on('data', d => stderrLines.push(String(d)));
const client = new Client({ name: 'memsnap-test', version: '1.0.0' });
await client.connect(transport);
check('server name', client.getServerVersion()?.name === 'memsnap', client.getServerVersion());
check('server capabilities: tools', client.getServerCapabilities()?.tools !== undefined, client.getServerCapabilities());
check('instructions name the allowed paths', (client.getInstructions() || '').includes(real('testdata')));
await client.ping();

const { tools } = await client.listTools();
const names = tools.map(t => t.name).sort();
check('tools', isDeepStrictEqual(names, ['analyze', 'check', 'diff', 'events', 'flame', 'segments', 'simulate']), names);
const byName = Object.fromEntries(tools.map(t => [t.name, t]));
const validator = new AjvJsonSchemaValidator();
for (const t of tools) {
  check(`${t.name}: input schema is an object schema`, t.inputSchema?.type === 'object', t.inputSchema);
  check(`${t.name}: output schema is an object schema`, t.outputSchema?.type === 'object', t.outputSchema);
  check(`${t.name}: read-only`, t.annotations?.readOnlyHint === true, t.annotations);
}

// A tool call: the client validates structuredContent against the tool's output schema (and
// throws if it does not match); checked again here, and a wrong copy must fail the same schema.
let validated = 0;
async function call(name, args) {
  let r;
  try {
    r = await client.callTool({ name, arguments: args });
  } catch (e) {  // the client's own validation against the output schema, among others
    check(`${name} ${JSON.stringify(args)}: the client accepts the result`, false, String(e));
    return { isError: true, content: [{ type: 'text', text: String(e) }] };
  }
  if (r.isError) return r;
  const v = validator.getValidator(byName[name].outputSchema);
  const ok = v(r.structuredContent);
  check(`${name} ${JSON.stringify(args)}: output schema`, ok.valid, ok.errorMessage);
  const broken = structuredClone(r.structuredContent);
  delete broken[byName[name].outputSchema.required[0]];
  check(`${name}: a document without ${byName[name].outputSchema.required[0]} fails the schema`, !v(broken).valid);
  check(`${name}: a text summary`, r.content?.[0]?.type === 'text' && r.content[0].text.length > 0, r.content);
  validated++;
  return r;
}
async function same(name, args, cliArgs) {
  const r = await call(name, args);
  check(`${name} ${JSON.stringify(args)}: answered`, !r.isError, r.content);
  if (r.isError) return r;
  const want = cliJson(cliArgs);
  const d = firstDifference(r.structuredContent, want);
  check(`${name} ${JSON.stringify(args)}: the CLI's JSON (memsnap ${cliArgs.join(' ')})`, d === null, d);
  return r;
}

const snapgen = fs.readdirSync('testdata/snapgen').filter(f => f.endsWith('.pickle')).sort();
for (const f of snapgen) {
  const file = `testdata/snapgen/${f}`;
  await same('analyze', { file }, ['analyze', '--format', 'json', fixture(f)]);
}
mark(`analyze on ${snapgen.length} fixtures`);
const frag = 'testdata/snapgen/frag.pickle';
await same('analyze', { file: frag, at: 1000, fits: '20MiB' },
  ['analyze', '--format', 'json', '--at', '1000', '--fits', '20MiB', fixture('frag.pickle')]);
await same('analyze', { file: 'testdata/snapgen/devices2.pickle', device: 1 },
  ['analyze', '--format', 'json', '--device', '1', fixture('devices2.pickle')]);
await same('diff', { before: 'testdata/snapgen/leak.step4.pickle', after: 'testdata/snapgen/leak.step10.pickle', top: 5 },
  ['diff', '--format', 'json', '--top', '5', fixture('leak.step4.pickle'), fixture('leak.step10.pickle')]);
await same('simulate', { file: frag, set: ['expandable_segments:True', 'max_split_size_mb:64'] },
  ['simulate', '--format', 'json', '--set', 'expandable_segments:True', '--set', 'max_split_size_mb:64', fixture('frag.pickle')]);
await same('simulate', { file: frag, min_capacity: true },
  ['simulate', '--format', 'json', '--min-capacity', fixture('frag.pickle')]);
for (const around of ['oom', 'peak', 100]) {
  await same('events', { file: frag, around, count: 12, stacks: true },
    ['events', '--format', 'json', '--around', String(around), '--count', '12', '--stacks', fixture('frag.pickle')]);
}
await same('segments', { file: frag, at: 1537, top: 0 },
  ['segments', '--format', 'json', '--at', '1537', '--top', '0', fixture('frag.pickle')]);
await same('segments', { file: 'testdata/snapgen/expandable.pickle' },
  ['segments', '--format', 'json', fixture('expandable.pickle')]);
const checkArgs = { files: [frag, 'testdata/snapgen/train.pickle'], max_peak: '100MiB', no_oom: true, max_fragmentation: 0.4 };
const checked = await same('check', checkArgs, ['check', '--format', 'json', '--max-peak', '100MiB', '--no-oom',
  '--max-fragmentation', '0.4', fixture('frag.pickle'), fixture('train.pickle')]);
check('check: a failed limit is an answer', !checked.isError && checked.structuredContent?.status === 'fail',
  checked.structuredContent?.status);

// flame: the folded stacks exactly as `memsnap flame --format folded` writes them; bytes their sum.
for (const [f, at, state] of [['leak.pickle', 'dump', 'allocated'], ['frag.pickle', 'peak', 'active'],
  ['frag.pickle', 'oom', 'allocated'], ['devices2.pickle', 'dump', 'all'], ['frag.pickle', 700, 'allocated']]) {
  const r = await call('flame', { file: `testdata/snapgen/${f}`, at, state });
  check(`flame ${f} ${at}: answered`, !r.isError, r.content);
  if (r.isError) continue;
  const want = cli(['flame', '--format', 'folded', '--at', String(at), '--state', state, fixture(f)]);
  check(`flame ${f} ${at} ${state}: the CLI's folded stacks`, r.structuredContent.folded === want.stdout,
    firstDifference(r.structuredContent.folded.split('\n'), want.stdout.split('\n')));
  const lines = want.stdout.split('\n').filter(Boolean);
  const sum = lines.reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  check(`flame ${f} ${at}: bytes and stacks`, r.structuredContent.bytes === sum && r.structuredContent.stacks === lines.length,
    [r.structuredContent.bytes, sum, r.structuredContent.stacks, lines.length]);
}

mark('every tool');
// ---- errors: each answered, and the server keeps serving ----------------------------------------
async function refused(name, args, words) {
  const r = await client.callTool({ name, arguments: args });
  const text = r.content?.[0]?.text || '';
  check(`${name} ${JSON.stringify(args)}: an error result`, r.isError === true && text.includes(words), [r.isError, text]);
  await client.ping();
}
await refused('analyze', { file: '/etc/passwd' }, 'outside the allowed paths');
await refused('analyze', { file: 'testdata/../README.md' }, 'outside the allowed paths');
await refused('analyze', { file: 'testdata/snapgen/no-such.pickle' }, 'No such file');
await refused('analyze', { file: '-' }, 'standard input');
await refused('analyze', { file: 'testdata/snapgen' }, 'not a regular file');
await refused('analyze', { file: 'testdata/bad/truncated.pickle' }, 'truncated.pickle');
await refused('diff', { before: frag, after: '/etc/hostname' }, 'outside the allowed paths');
await refused('check', { files: [frag, '/etc/passwd'], no_oom: true }, 'outside the allowed paths');
await refused('analyze', { file: 3 }, 'file: must be');
await refused('analyze', {}, 'file: required');
await refused('analyze', { file: frag, color: true }, "unknown argument 'color'");
await refused('events', { file: frag, count: 0 }, 'count: must be at least 1');
await refused('events', { file: frag, around: 'soon' }, 'expected oom, peak or an event index');
await refused('analyze', { file: frag, oom_message: '@/etc/passwd' }, 'the message');
await refused('check', { files: [frag] }, 'no limit given');
await refused('flame', { file: 'testdata/snapgen/train.pickle', at: 'oom' }, 'no out-of-memory event');
try {
  await client.callTool({ name: 'rm', arguments: {} });
  check('unknown tool: a JSON-RPC error', false, 'answered');
} catch (e) {
  check('unknown tool: invalid params (-32602)', e instanceof McpError && e.code === -32602, String(e));
}
await client.ping();
check('stderr has the diagnostics', stderrLines.join('').includes('memsnap mcp: analyze: error:'), stderrLines.join('').slice(0, 300));
await client.close();

mark('errors through the client');
// ---- raw lines: what the SDK cannot send ----------------------------------------------------------
// A server of our own on pipes: every line it writes must be one JSON-RPC message.
function rawServer(args) {
  const child = spawn(MEMSNAP, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const replies = [];
  const junk = [];
  let buffer = '';
  const waiters = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', d => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        junk.push(line);
        continue;
      }
      if (m.jsonrpc !== '2.0') junk.push(line);
      replies.push(m);
      for (const w of waiters.splice(0)) w();
    }
  });
  child.stderr.resume();
  const send = text => child.stdin.write(text);
  // The reply with this id (or the next reply with a null id).
  async function reply(id, ms = 20000) {
    const found = () => replies.findIndex(m => m.id === id);
    const start = Date.now();
    while (found() < 0 && Date.now() - start < ms) await new Promise(r => { waiters.push(r); setTimeout(r, 200); });
    const i = found();
    return i < 0 ? undefined : replies.splice(i, 1)[0];
  }
  return { child, send, reply, replies, junk };
}
const ping = id => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }) + '\n';
const callLine = (id, name, args) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }) + '\n';

{
  const s = rawServer(['--allow', 'testdata']);
  s.send(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) + '\n');
  const init = await s.reply(0);
  check('an older revision is spoken', init?.result?.protocolVersion === '2024-11-05', init);
  for (const [asked, answer] of [[LATEST_PROTOCOL_VERSION, LATEST_PROTOCOL_VERSION], ['1999-01-01', LATEST_PROTOCOL_VERSION]]) {
    s.send(JSON.stringify({ jsonrpc: '2.0', id: asked, method: 'initialize', params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) + '\n');
    check(`initialize asking ${asked}: ${answer}`, (await s.reply(asked))?.result?.protocolVersion === answer);
  }
  s.send(JSON.stringify({ jsonrpc: '2.0', id: 'again', method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) + '\n');
  await s.reply('again');
  s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  // [what, the line, the error code, the id the error carries: the request's where it can be read]
  const cases = [
    ['not JSON', 'this is not json\n', -32700, null],
    ['no method', '{"jsonrpc":"2.0","id":1}\n', -32600, 1],
    ['wrong jsonrpc', '{"jsonrpc":"1.0","id":2,"method":"ping"}\n', -32600, 2],
    ['a batch', '[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n', -32600, null],
    ['a string', '"ping"\n', -32600, null],
    ['null id', '{"jsonrpc":"2.0","id":null,"method":"ping"}\n', -32600, null],
    ['unknown method', '{"jsonrpc":"2.0","id":4,"method":"resources/list"}\n', -32601, 4],
    ['params not an object', '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}\n', -32602, 5],
    ['tools/call without a name', '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}\n', -32602, 6],
    ['arguments not an object', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"analyze","arguments":"x"}}\n', -32602, 7],
    ['initialize without a version', '{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}\n', -32602, 8],
    ['nested 100 deep', '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":' + '['.repeat(100) + ']'.repeat(100) + '}}\n', -32600, null],
  ];
  let n = 100;
  for (const [name, line, code, expectId] of cases) {
    s.send(line);
    const r = await s.reply(expectId);
    check(`raw ${name}: error ${code}`, r?.error?.code === code, r);
    s.send(ping(++n));
    check(`raw ${name}: keeps serving`, (await s.reply(n))?.result !== undefined);
  }
  const legacy = await (s.send(callLine(++n, 'segments', { file: 'testdata/snapgen/frag.pickle', top: 1 })), s.reply(n));
  check('an older revision also gets the document as text', legacy?.result?.content?.length === 2 &&
    isDeepStrictEqual(JSON.parse(legacy.result.content[1].text), legacy.result.structuredContent), legacy?.result?.content?.length);

  mark('raw lines');
  // A 32 MiB request: refused with invalid request, never held whole (the peak RSS grows far less).
  const peakRss = () => Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${s.child.pid}/status`, 'utf8'))?.[1]) * 1024;
  const before = peakRss();
  const chunk = 'x'.repeat(1 << 20);
  s.send('{"jsonrpc":"2.0","id":999,"method":"ping","params":{"pad":"');
  for (let i = 0; i < 32; i++) s.send(chunk);
  s.send('"}}\n');
  const huge = await s.reply(null, 60000);
  check('a 32 MiB line: invalid request', huge?.error?.code === -32600 && /larger than/.test(huge?.error?.message), huge);
  s.send(ping(++n));
  check('a 32 MiB line: keeps serving', (await s.reply(n))?.result !== undefined);
  const grew = peakRss() - before;
  check('a 32 MiB line was never held (peak RSS grew less than 8 MiB)', before > 0 && grew < 8 << 20, [before, grew]);

  mark('a 32 MiB line');
  // Cancellation: a call cancelled while queued or running gets no reply; later ones do.
  s.send(callLine(500, 'analyze', { file: 'testdata/snapgen/frag.pickle' }) + callLine(501, 'analyze', { file: 'testdata/snapgen/leak.pickle' }));
  s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 500, reason: 'test' } }) + '\n');
  s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 501, reason: 'test' } }) + '\n');
  s.send(callLine(502, 'segments', { file: 'testdata/snapgen/frag.pickle', top: 1 }));
  check('after cancellations: the next call is answered', (await s.reply(502))?.result?.isError === false);
  check('cancelled calls: no reply', (await s.reply(500, 500)) === undefined && (await s.reply(501, 500)) === undefined);
  s.send(JSON.stringify({ jsonrpc: '2.0', method: 'no/such/notification' }) + '\n' + ping(++n));
  check('an unknown notification: no reply, and on', (await s.reply(n))?.result !== undefined);
  check('stdout held nothing but JSON-RPC messages', s.junk.length === 0, s.junk.slice(0, 3));
  check('no reply left unclaimed', s.replies.length === 0, s.replies.slice(0, 3));
  s.child.stdin.end();
  const code = await new Promise(r => s.child.on('exit', r));
  check('end of input: the server exits 0', code === 0, code);
}

// A symbolic link inside an allowed directory that leads out of it is refused.
{
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memsnap-mcp-'));
  fs.copyFileSync('testdata/snapgen/leak.pickle', path.join(dir, 'inside.pickle'));
  fs.symlinkSync(fixture('frag.pickle'), path.join(dir, 'outside.pickle'));
  fs.symlinkSync(path.join(dir, 'inside.pickle'), path.join(dir, 'alias.pickle'));
  const s = rawServer(['--allow', dir]);
  s.send(callLine(1, 'analyze', { file: path.join(dir, 'outside.pickle') }));
  const out = await s.reply(1);
  check('a link out of the allowed directory: refused', out?.result?.isError === true &&
    /through a symbolic link/.test(out.result.content[0].text), out?.result);
  s.send(callLine(2, 'analyze', { file: path.join(dir, 'alias.pickle') }));
  const alias = await s.reply(2);
  check('a link inside the allowed directory: followed', alias?.result?.isError === false, alias?.result?.content);
  s.child.stdin.end();
  await new Promise(r => s.child.on('exit', r));
  fs.rmSync(dir, { recursive: true });
}

// The server refuses to start without a usable --allow: one line, exit 2.
{
  const p = cli(['mcp', '--allow', '/no/such/dir']);
  check('mcp --allow of a missing path: exit 2, one line', p.status === 2 && p.stderr.trim().split('\n').length === 1 &&
    p.stdout === '', [p.status, p.stderr]);
}

console.log(`${validated} results validated against their output schemas`);
for (const f of failures) console.log('FAIL ' + f);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
