// Admission leases over real HTTP: a key's calls on one thread are admitted from a lease (far fewer
// admit.lua calls than calls) and each is still charged exactly; the rate window is never exceeded;
// leases change neither how many calls a balance admits nor what they cost; idle leases and a
// graceful shutdown close every lease (nothing held, every charge in Postgres).
import http from 'node:http';
import type { Socket } from 'node:net';
import t from 'tap';
import { keysMatching, startGateway, type Gateway } from './helpers/harness.js';
import { chatBody, costNano, leasesClosed, parseJson, envelopeProblems, reserveNano, sampleAvailable, usdString, usdToNano } from './helpers/billing-checks.js';
import { parsePrometheus, rawRequest, sumSamples } from './helpers/http-tools.js';

const NO_PRACTICAL_LIMIT = '1000000/10';

interface Call {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** Local port of the connection the response came over. */
  connection: number;
}

/** POST a chat body over `agent` (keep-alive), remembering the connection it went over. */
function post(agent: http.Agent, gateway: Gateway, key: string, body: string): Promise<Call> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gateway.v1}/chat/completions`, {
      method: 'POST', agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    }, (res) => {
      // Read now: a keep-alive socket leaves the response when it ends.
      const connection = (res.socket as Socket).localPort ?? -1;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => { text += part; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, connection }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Exact charge of a successful non-streaming gpt-4o-mini call, from its usage. */
function chargeOf(call: Call): bigint {
  const { usage } = JSON.parse(call.text) as { usage: { prompt_tokens: number; completion_tokens: number } };
  return costNano(usage.prompt_tokens, usage.completion_tokens);
}

async function metric(gateway: Gateway, name: string): Promise<number> {
  return sumSamples(parsePrometheus((await rawRequest(`${gateway.url}/metrics`)).text), name);
}

/** The weight in the rate window of the user's one key (the sum of the slots its members hold). */
async function windowWeight(gateway: Gateway, user: string): Promise<number> {
  const keys = await keysMatching(gateway.redis, `${gateway.prefix}{u:${user}}:rlw:*`);
  if (keys.length !== 1) throw new Error(`expected one rate window, found ${keys.length}`);
  return Number((await gateway.redis.hget(keys[0]!, '#')) ?? '0');
}

async function usageRows(gateway: Gateway, user: string): Promise<Map<string, bigint>> {
  const rows = await gateway.sql<{ id: string; credits_nano: bigint }[]>`
    select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  return new Map(rows.map((row) => [row.id, row.credits_nano]));
}

t.test('300 sequential calls on one keep-alive connection: few admit.lua calls, every call charged exactly, nothing held once idle', async (t) => {
  const gateway = await startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: NO_PRACTICAL_LIMIT } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(async () => { agent.destroy(); await gateway.close(); });
  const user = 'lease-sequential';
  const initial = 5_000_000_000n;
  const { token, key } = await gateway.user(user, usdString(initial));
  const body = chatBody('lease sequential [[mock chunks=2]]', { max_tokens: 5 });
  const admitsBefore = await metric(gateway, 'gateway_admission_lease_slots_count');

  const CALLS = 300;
  const calls: Call[] = [];
  for (let i = 0; i < CALLS; i++) calls.push(await post(agent, gateway, key, body));
  t.same([...new Set(calls.map((c) => c.status))], [200], 'every call succeeds');
  t.equal(new Set(calls.map((c) => c.connection)).size, 1, 'all over one keep-alive connection');

  const admits = (await metric(gateway, 'gateway_admission_lease_slots_count')) - admitsBefore;
  const slots = await metric(gateway, 'gateway_admission_lease_slots_sum');
  t.ok(admits >= 1 && admits < 60, `far fewer admit.lua calls than calls (${admits} for ${CALLS})`);
  t.ok(slots >= CALLS, `the leases granted a slot for every call (${slots} slots)`);

  const idleFrom = Date.now();
  const money = await leasesClosed(gateway, user);
  const closedAfter = Date.now() - idleFrom;
  t.ok(closedAfter < 2000, `the idle leases closed soon after the traffic stopped (${closedAfter} ms; idle close is 250 ms)`);
  t.equal(money.held, 0n, 'once idle, nothing held');
  t.equal(money.openReservations, 0, 'once idle, no open reservation (lease)');
  t.equal(await windowWeight(gateway, user), CALLS, 'the unused slots went back to the window: it counts exactly the calls');
  await gateway.ledgerSettled(user);

  const rows = await usageRows(gateway, user);
  t.equal(rows.size, CALLS, 'one usage transaction per call');
  let charges = 0n;
  let matched = 0;
  for (const call of calls) {
    const id = call.headers['x-request-id'];
    const charge = chargeOf(call);
    charges += charge;
    if (typeof id === 'string' && rows.get(id) === -charge) matched++;
  }
  t.equal(matched, CALLS, 'each call has the usage transaction named by its x-request-id, for exactly its usage');
  const after = await gateway.balanceNano(user);
  t.equal(after.credits, initial - charges, 'credits dropped by exactly the sum of the charges');
  t.equal(await gateway.ledgerSum(user), after.credits, 'the Postgres ledger adds up to the Redis credits');
  const balance = await gateway.balance(token);
  t.equal(balance.held, 0, 'balance API: held 0');
  t.equal(usdToNano(balance.credits), initial - charges, 'balance API: credits');
  t.equal(balance.available, balance.credits, 'balance API: available = credits');
});

t.test('the rate window is never exceeded with leases: 120 per 10 s over two bursts', async (t) => {
  const gateway = await startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: '120/10' } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  t.teardown(async () => { agent.destroy(); await gateway.close(); });
  const user = 'lease-window';
  const { key } = await gateway.user(user, '5');
  const body = chatBody('lease window [[mock chunks=1]]', { max_tokens: 5 });
  const started = Date.now();

  const first = await Promise.all(Array.from({ length: 200 }, () => post(agent, gateway, key, body)));
  const firstAdmitted = first.filter((c) => c.status === 200).length;
  t.ok(new Set(first.map((c) => c.connection)).size > 1, 'the burst went over several connections');
  t.ok(firstAdmitted <= 120 && firstAdmitted > 0, `first burst: ${firstAdmitted} admitted`);
  // The leases close once idle: their unused slots go back to the window.
  const closed = await leasesClosed(gateway, user);
  t.equal(closed.held, 0n, 'nothing held between the bursts');
  t.equal(await windowWeight(gateway, user), firstAdmitted, 'the window counts exactly the admitted calls');

  const second = await Promise.all(Array.from({ length: 60 }, () => post(agent, gateway, key, body)));
  const all = [...first, ...second];
  const elapsed = Date.now() - started;
  t.ok(elapsed < 9_000, `both bursts inside one 10 s window (${elapsed} ms)`);
  t.same([...new Set(all.map((c) => c.status))].sort(), [200, 429], 'only 200 and 429');
  t.equal(all.filter((c) => c.status === 200).length, 120, 'exactly the limit admitted over both bursts');
  const limited = all.filter((c) => c.status === 429);
  t.equal(limited.length, 260 - 120, 'all others rate limited');
  t.ok(limited.every((c) => /^\d+$/.test(String(c.headers['retry-after'])) && Number(c.headers['retry-after']) >= 1 && Number(c.headers['retry-after']) <= 11),
    'every 429 has Retry-After in whole seconds within the window (and a lease life)');
  t.ok(limited.every((c) => envelopeProblems(parseJson(c.text), 429).length === 0), 'every 429 carries the error envelope');

  const money = await leasesClosed(gateway, user);
  t.equal(money.held, 0n, 'nothing held after');
  await gateway.ledgerSettled(user);
  t.equal((await usageRows(gateway, user)).size, 120, 'one usage transaction per admitted call');
});

t.test('leases admit exactly as many calls as call-by-call admission, for the same credits', async (t) => {
  const [leased, callByCall] = await Promise.all([
    startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: NO_PRACTICAL_LIMIT } }),
    startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: NO_PRACTICAL_LIMIT, ADMISSION_LEASE_CALLS: '1' } }),
  ]);
  t.teardown(() => Promise.all([leased.close(), callByCall.close()]));
  const user = 'lease-differential';
  const maxTokens = 20;
  const body = chatBody('lease differential [[mock chunks=3]]', { max_tokens: maxTokens });
  const reserve = reserveNano(body, maxTokens);
  // A lease holds more than one call only while the spare credit is at least 8 worst cases (the 1/8
  // rule), so the balance starts above that: leases are used first, then the last calls go one by one.
  const initial = reserve * 20n + reserve / 2n;

  const run = async (gateway: Gateway) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const { key } = await gateway.user(user, usdString(initial));
      const admitsBefore = await metric(gateway, 'gateway_admission_lease_slots_count');
      const sampler = sampleAvailable(gateway, user);
      const charges: bigint[] = [];
      let last: Call | undefined;
      for (let i = 0; i < 500; i++) {
        last = await post(agent, gateway, key, body);
        if (last.status !== 200) break;
        charges.push(chargeOf(last));
      }
      const { min, samples } = await sampler.stop();
      const admits = (await metric(gateway, 'gateway_admission_lease_slots_count')) - admitsBefore;
      // "... and 0.0000267 USD is available."
      const stated = /and ([0-9.e-]+) USD is available/.exec(String(parseJson(last?.text ?? '')?.msg))?.[1];
      const money = await leasesClosed(gateway, user);
      await gateway.ledgerSettled(user);
      return {
        admitted: charges.length, charges, admits, stoppedWith: last?.status, statedAvailable: stated === undefined ? undefined : usdToNano(Number(stated)),
        min, samples, money, ledgerSum: await gateway.ledgerSum(user), rows: (await usageRows(gateway, user)).size,
      };
    } finally {
      agent.destroy();
    }
  };
  const [withLeases, withoutLeases] = await Promise.all([run(leased), run(callByCall)]);

  const charge = withoutLeases.charges[0]!;
  t.ok(withoutLeases.charges.every((c) => c === charge) && withLeases.charges.every((c) => c === charge), 'every call costs the same');
  // Call by call admits while the worst case still fits: after k calls, initial - k * charge >= reserve.
  const expected = Number((initial - reserve) / charge) + 1;
  t.ok(expected > 5, `more calls than worst cases fit (${expected})`);
  t.equal(withoutLeases.admitted, expected, `call by call admits ${expected}`);
  t.equal(withLeases.admitted, withoutLeases.admitted, 'leases admit exactly as many calls');
  // The histogram observes granted leases (a refused admit.lua grants none).
  t.equal(withoutLeases.admits, expected, 'call by call: one granted admit.lua per call');
  t.ok(withLeases.admits < withLeases.admitted / 2, `leases were used: ${withLeases.admits} admit.lua calls for ${withLeases.admitted} calls`);
  t.equal(withLeases.stoppedWith, 402, 'leases: stopped by a 402');
  t.equal(withoutLeases.stoppedWith, 402, 'call by call: stopped by a 402');
  t.equal(withLeases.money.credits, withoutLeases.money.credits, 'the same final credits');
  t.equal(withLeases.money.credits, initial - charge * BigInt(expected), 'exactly the charges');
  for (const [label, r] of [['leases', withLeases], ['call by call', withoutLeases]] as const) {
    t.equal(r.statedAvailable, initial - charge * BigInt(expected), `${label}: the 402 states exactly what was left (no credit still held by a lease)`);
    t.ok(r.samples > 0 && r.min >= 0n, `${label}: available never below zero (min ${r.min}, ${r.samples} samples)`);
    t.equal(r.money.held, 0n, `${label}: nothing held once idle`);
    t.equal(r.money.openReservations, 0, `${label}: no open reservation`);
    t.equal(r.rows, r.admitted, `${label}: one usage transaction per admitted call`);
    t.equal(r.ledgerSum, r.money.credits, `${label}: the Postgres ledger adds up to the Redis credits`);
  }
});

t.test('graceful shutdown closes the leases: nothing held, every charge in Postgres', async (t) => {
  const gateway = await startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: NO_PRACTICAL_LIMIT } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  t.teardown(async () => { agent.destroy(); await gateway.close(); });
  const user = 'lease-shutdown';
  const initial = 5_000_000_000n;
  const { key } = await gateway.user(user, usdString(initial));
  const body = chatBody('lease shutdown [[mock chunks=2]]', { max_tokens: 5 });

  const CALLS = 100;
  const calls: Call[] = [];
  for (let i = 0; i < CALLS / 2; i++) calls.push(...(await Promise.all([post(agent, gateway, key, body), post(agent, gateway, key, body)])));
  t.same([...new Set(calls.map((c) => c.status))], [200], 'every call succeeds');
  t.ok((await gateway.redis.hlen(`${gateway.prefix}{u:${user}}:res`)) > 0, 'a lease is still open when the signal arrives');

  t.equal(await gateway.stop('SIGTERM'), 0, 'the gateway exits 0');
  t.notMatch(gateway.output, /"level":"error"/, 'no error logged');

  const charges = calls.reduce((sum, call) => sum + chargeOf(call), 0n);
  const redisBalance = await gateway.balanceNano(user);
  t.equal(redisBalance.held, 0n, 'nothing held in Redis');
  t.equal(await gateway.redis.hlen(`${gateway.prefix}{u:${user}}:res`), 0, 'no open reservation (lease) in Redis');
  t.equal(await gateway.redis.hlen(`${gateway.prefix}{u:${user}}:lbatch`), 0, 'no lease batch number kept');
  t.equal(await windowWeight(gateway, user), CALLS, 'the unused slots went back to the window');
  t.equal(redisBalance.credits, initial - charges, 'Redis credits dropped by exactly the charges');
  t.equal(await gateway.redis.xlen(`${gateway.prefix}{u:${user}}:ledger`), 0, 'no ledger event left in Redis');
  const rows = await usageRows(gateway, user);
  t.equal(rows.size, CALLS, 'every call has its usage transaction in Postgres');
  t.ok(calls.every((call) => rows.get(String(call.headers['x-request-id'])) === -chargeOf(call)), 'each for exactly its charge, under its x-request-id');
  t.equal(await gateway.ledgerSum(user), initial - charges, 'the Postgres ledger adds up');
});
