// Coupon guessing is bounded (issue 24, item 15): past COUPON_FAILURE_BUDGET unknown codes in its
// window an account gets 429 with Retry-After before any code is looked up, a real code included;
// other accounts are not affected; a spent code does not count. Through real HTTP.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, mintToken } from './helpers/http-tools.js';

const BUDGET = 3;
let gateway: Gateway;

t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, COUPON_FAILURE_BUDGET: String(BUDGET), COUPON_FAILURE_WINDOW_SECONDS: '900' } });
});
t.teardown(() => gateway.close());

const createCoupon = (usd: string) => gateway.cli('coupon', 'create', '--credits', usd);
async function redeem(token: string, code: string): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${gateway.url}/api/v1/billing/coupons/redeem`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ code }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

t.test('unknown codes past the budget are 429 with Retry-After; a real code then credits nothing', async (t) => {
  const guesser = mintToken('coupon-guesser');
  const real = await createCoupon('1');
  const spent = await createCoupon('1');
  t.equal((await redeem(mintToken('coupon-other'), spent)).status, 200);
  for (let i = 0; i < 2; i++) assertEnvelope(t, await redeem(guesser, spent), 409, 'coupon_redeemed', 'a spent code does not count');
  for (let i = 0; i < BUDGET; i++) assertEnvelope(t, await redeem(guesser, `GUESS-${i}`), 404, 'coupon_not_found', `guess ${i + 1}`);
  const refused = await redeem(guesser, 'GUESS-NEXT');
  assertEnvelope(t, refused, 429, 'too_many_failures', 'past the budget');
  t.equal(refused.body.error.param, 'code');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After is the rest of the window (${retryAfter} s)`);
  assertEnvelope(t, await redeem(guesser, real), 429, 'too_many_failures', 'a real code is not even looked up');
  t.equal((await gateway.balance(guesser)).credits, 0, 'nothing credited');
  const other = await redeem(mintToken('coupon-bystander'), real);
  t.equal(other.status, 200, 'another account redeems it');
});
