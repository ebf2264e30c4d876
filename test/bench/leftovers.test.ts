// bench/lib/leftovers.ts: a benchmark that ends short of its own cleanup (an exception
// nobody caught, a signal) leaves no venue, no PostgreSQL, no child process and no data
// folder behind. A fixture process starts them for real and then fails or is signalled;
// everything it started must be gone shortly after it ended.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('./fixtures/leftover-maker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Running: /proc has it and it is not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

// If the cleanup fails, the test fails; what the fixture left is then removed here, so that
// a failing run does not leave servers behind either.
const made: { pids: number[]; folders: string[] }[] = [];
after(() => {
  for (const { pids, folders } of made) {
    for (const pid of pids) if (running(pid)) process.kill(pid, 'SIGKILL');
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  }
});

async function runFixture(how: 'throw' | 'wait'): Promise<{ report: Record<string, number | string>; code: number | null; signal: NodeJS.Signals | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, how], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-8000)));
  const report = await new Promise<Record<string, number | string>>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line !== undefined) resolve(JSON.parse(line) as Record<string, number | string>);
    });
    child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before its report:\n${err}`)));
  });
  made.push({
    pids: Object.entries(report)
      .filter(([key]) => key.endsWith('Pid') || key.endsWith('Postmaster'))
      .map(([, v]) => Number(v)),
    folders: Object.entries(report)
      .filter(([key]) => key.endsWith('Dir'))
      .map(([, v]) => String(v)),
  });
  if (how === 'wait') child.kill('SIGTERM');
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve([child.exitCode, child.signalCode]);
    else child.once('exit', (c, s) => resolve([c, s]));
  });
  return { report, code, signal };
}

async function gone(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

test(
  'a bench venue runs as npm start runs it; a benchmark that dies of an uncaught exception stops its venue, the PostgreSQL servers and child processes it started, and removes their folders',
  { timeout: 120_000 },
  async () => {
    const { report, code } = await runFixture('throw');
    assert.equal(code, 1, 'the fixture ends with its uncaught exception');
    const pids = { venue: Number(report.venuePid), venuePostgres: Number(report.venuePostmaster), ownPostgres: Number(report.pgPostmaster), child: Number(report.sleeperPid) };
    for (const [name, pid] of Object.entries(pids)) assert.ok(pid > 0, `no pid for ${name}: ${JSON.stringify(report)}`);
    assert.equal(report.venueHugePages, 'yes', 'a bench venue asks for huge pages as npm start does, however the bench was started');
    for (const [name, pid] of Object.entries(pids)) assert.ok(await gone(() => !running(pid), 10_000), `${name} (pid ${pid}) still runs after the benchmark ended`);
    for (const folder of [String(report.venueDir), String(report.pgDir)]) {
      assert.match(folder, /venue-bench-/);
      assert.ok(await gone(() => !existsSync(folder), 10_000), `${folder} is still there`);
    }
  },
);

test("a benchmark ended by SIGTERM stops its child processes first, and ends with the signal's exit code", { timeout: 60_000 }, async () => {
  const { report, code } = await runFixture('wait');
  assert.equal(code, 143);
  const pid = Number(report.sleeperPid);
  assert.ok(pid > 0);
  assert.ok(await gone(() => !running(pid), 10_000), `the child (pid ${pid}) still runs after the benchmark ended`);
});
