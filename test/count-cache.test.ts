// The prompt-count cache of token budgets: a user's own long texts only, within its character bound.
import t from 'tap';
import { CountCache } from '../src/billing/count-cache.js';

t.test("remembers a user's counts, never another user's, and holds no more characters than its bound", async (t) => {
  const text = 'x'.repeat(100);
  const cache = new CountCache(350, 10);
  cache.set('alice', text, 7);
  t.equal(cache.get('alice', text), 7, "alice's count");
  t.equal(cache.get('bob', text), undefined, 'not told to bob');
  cache.set('bob', text, 7);
  cache.set('carol', text, 7);
  t.equal(cache.size, 3, 'three keys of about 105 characters fit 350');
  t.equal(cache.get('alice', text), 7, 'alice used hers again: the newest now');
  cache.set('dave', text, 7);
  t.equal(cache.size, 3, 'a fourth pushes the oldest out');
  t.equal(cache.get('bob', text), undefined, 'bob, the least recently used, went');
  t.equal(cache.get('alice', text), 7, 'alice stayed');
  cache.set('erin', 'y'.repeat(400), 9);
  t.equal(cache.get('erin', 'y'.repeat(400)), undefined, 'a text larger than the whole bound is not kept');
  t.equal(cache.size, 3, 'and pushes nothing out');
});
