import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_PRINCIPALS_FILE, Principals } from '../../gateway/principals.ts';

test('authenticate takes the Bearer scheme in any case and nothing else', () => {
  const principals = Principals.load(DEFAULT_PRINCIPALS_FILE);
  const token = 'dev-token-trader-a';
  const trader = principals.authenticate(`Bearer ${token}`);
  assert.notEqual(trader, null);
  for (const scheme of ['bearer', 'BEARER', 'bEaReR']) assert.equal(principals.authenticate(`${scheme} ${token}`), trader, scheme);
  for (const header of [`Basic ${token}`, `Bearerx ${token}`, `Beare ${token}`, `Bearer\t${token}`, `Bearer`, `Bearer `, `Bearer wrong-token-value`, `B\u0000arer ${token}`]) {
    assert.equal(principals.authenticate(header), null, JSON.stringify(header));
  }
  // The cached lookup answers the same as the first.
  assert.equal(principals.authenticate(`Bearer ${token}`), trader);
});
