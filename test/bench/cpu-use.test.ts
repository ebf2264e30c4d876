// The load benchmark's CPU accounting (bench/load/cpu-use.ts): /proc's stat lines read
// right whatever a thread is named, each venue thread put in its part by name, and the
// figures per answered command computed from two samples: CPU, the times each part's
// threads slept, and how long they waited for a core.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import os from 'node:os';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import {
  childrenOf,
  cpuPerCommand,
  machineUse,
  parseMachine,
  sampleCpu,
  sampleMachine,
  samplePostgresCpu,
  sampleThreadCpu,
  sampleSleeps,
  parseSchedstat,
  sampleWaits,
  sleepsPerCommand,
  statParent,
  statReapedTicks,
  statState,
  statTicks,
  statusSleeps,
  venuePart,
  venueThread,
  waitsPerCommand,
  type CpuSample,
} from '../../bench/load/cpu-use.ts';
import { statsPerCommand } from '../../bench/lib/cpu-runs.ts';

/**
 * Samples before and after a named test thread does its piece of work (it posts once when
 * it has named itself, and once when a message's work is done): what each part counted meanwhile.
 */
async function aroundWork(worker: Worker, sample: () => CpuSample): Promise<(part: string) => number> {
  await new Promise((resolve) => worker.once('message', resolve));
  const before = sample();
  worker.postMessage('work');
  await new Promise((resolve) => worker.once('message', resolve));
  const after = sample();
  return (part) => (after.get(part) ?? 0) - (before.get(part) ?? 0);
}

test('a stat line is read after the last parenthesis: a name with spaces and parentheses does not shift the fields', () => {
  // pid (name) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  // ... utime stime cutime cstime priority ...
  const line = '4242 (a) (b c) S 17 4242 4242 0 -1 4194560 120 0 0 0 731 269 55 44 20 0 9 0 5000 100000 200 18446744073709551615';
  assert.equal(statState(line), 'S');
  assert.equal(statParent(line), 17);
  assert.equal(statTicks(line), 731 + 269);
  assert.equal(statReapedTicks(line), 55 + 44);
});

test('venue threads are put in their parts by the names the venue gives them', () => {
  assert.equal(venuePart('gateway-0'), 'gateways');
  assert.equal(venuePart('gateway-12'), 'gateways');
  assert.equal(venuePart('shard-1'), 'shards');
  assert.equal(venuePart('persistence'), 'persistence thread');
  assert.equal(venuePart('read'), 'read thread');
  for (const other of ['node', 'V8 DefaultWorke', 'libuv-worker', 'gateway', 'shard-x']) assert.equal(venuePart(other), 'main and V8', other);
});

test('venue threads one by one: named ones by their names, the main thread as main, the rest as helpers; a named spinning thread counted under its name', { timeout: 30_000 }, async () => {
  assert.equal(venueThread('gateway-1', '101', 100), 'gateway-1');
  assert.equal(venueThread('shard-0', '102', 100), 'shard-0');
  assert.equal(venueThread('persistence', '103', 100), 'persistence');
  assert.equal(venueThread('read', '104', 100), 'read');
  assert.equal(venueThread('node', '100', 100), 'main');
  assert.equal(venueThread('V8 DefaultWorke', '105', 100), 'V8 and libuv helpers');
  assert.equal(venueThread('libuv-worker', '106', 100), 'V8 and libuv helpers');
  const spinner = new Worker(
    `const { writeFileSync } = require('node:fs');
     const { parentPort } = require('node:worker_threads');
     writeFileSync('/proc/thread-self/comm', 'gateway-7');
     const { readFileSync } = require('node:fs');
     // Its own CPU ticks (utime + stime): it spins until it has used 30 of them, however busy the machine.
     const ticks = () => { const f = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' '); return Number(f[11]) + Number(f[12]); };
     parentPort.on('message', () => {
       const from = ticks();
       while (ticks() - from < 30);
       parentPort.postMessage('spun');
     });
     parentPort.postMessage('named');`,
    { eval: true },
  );
  try {
    const used = await aroundWork(spinner, () => sampleThreadCpu(process.pid));
    assert.ok(used('gateway-7') >= 29, `30 ticks of spinning are counted under its name (${used('gateway-7')})`);
    assert.ok(used('main') < used('gateway-7'), 'the main thread waited meanwhile');
  } finally {
    await spinner.terminate();
  }
});

test('CPU per answered command: each part by what it used between the samples, largest first, never below zero', () => {
  const before = new Map([
    ['gateways', 100],
    ['PostgreSQL', 50],
    ['read thread', 9], // a part whose threads ended meanwhile: less later, counted as nothing
  ]);
  const after = new Map([
    ['gateways', 300],
    ['PostgreSQL', 150],
    ['read thread', 4],
    ['generator', 40], // only in the later sample
  ]);
  const use = cpuPerCommand(before, after, 1_000, 2_000);
  // 10 ms a tick: gateways 200 ticks = 2 s over 1,000 commands = 2,000 µs each.
  assert.deepEqual(use.perCommandUs, { gateways: 2_000, PostgreSQL: 1_000, generator: 400, 'read thread': 0 });
  assert.deepEqual(Object.keys(use.perCommandUs), ['gateways', 'PostgreSQL', 'generator', 'read thread']);
  assert.equal(use.totalUs, 3_400);
  assert.equal(use.coresBusy, 1.7); // 3.4 s of CPU in a 2 s window
  assert.equal(use.commands, 1_000);
  assert.throws(() => cpuPerCommand(before, after, 0, 2_000), /answered commands and a window/);
  assert.throws(() => cpuPerCommand(before, after, 10, 0), /answered commands and a window/);
});

test('a sample counts a named thread of the venue in its part, and the processes a parent started', { timeout: 60_000 }, async () => {
  // A thread named as a gateway that burns 20 ticks (200 ms) of its own CPU, as /proc counts it.
  const burner = new Worker(
    `const { readFileSync, writeFileSync } = require('node:fs');
     const { parentPort } = require('node:worker_threads');
     writeFileSync('/proc/thread-self/comm', 'gateway-7');
     const ticks = () => {
       const stat = readFileSync('/proc/thread-self/stat', 'utf8');
       const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
       return Number(fields[11]) + Number(fields[12]);
     };
     // 'on', not 'once': the listener keeps the thread alive (and named) until it is terminated.
     parentPort.on('message', () => {
       const from = ticks();
       let x = 0;
       while (ticks() - from < 20) for (let i = 0; i < 1e5; i++) x += i;
       parentPort.postMessage(x > 0);
     });
     parentPort.postMessage('named');`,
    { eval: true },
  );
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const targets = { venuePid: process.pid, generatorPid: process.pid, postgresPid: process.pid };
    const used = await aroundWork(burner, () => sampleCpu(targets));
    const gateways = used('gateways');
    assert.ok(gateways >= 20, `the gateway-named thread's 20 ticks are in "gateways" (${gateways})`);
    // The process's own user and system ticks are each rounded down apart from the thread's: up to 2 fewer.
    const whole = used('generator');
    assert.ok(whole >= 18, `the whole process holds them too (${whole})`);
    assert.ok(childrenOf(process.pid).includes(child.pid!), 'a started process is found by its parent');
    assert.ok(!childrenOf(child.pid!).includes(process.pid), 'and not the other way round');
  } finally {
    child.kill('SIGKILL');
    await burner.terminate();
  }
});

test("PostgreSQL's processes that end between two samples are counted in full, through their parent's reaped ticks", { timeout: 60_000 }, async () => {
  // A parent (as a postmaster) that, when told, runs a child burning 30 ticks of CPU and waits
  // for it to end (so reaps it): the child is never alive when a sample is taken.
  const parent = spawn(
    process.execPath,
    [
      '-e',
      `const { spawnSync } = require('node:child_process');
       const burn = "const { readFileSync } = require('node:fs');" +
         "const ticks = () => { const s = readFileSync('/proc/self/stat', 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return Number(f[11]) + Number(f[12]); };" +
         "const from = ticks(); let x = 0; while (ticks() - from < 30) for (let i = 0; i < 1e5; i++) x += i;";
       process.stdin.once('data', () => { spawnSync(process.execPath, ['-e', burn], { stdio: 'ignore' }); process.stdout.write('reaped\\n'); });
       process.stdout.write('ready\\n');
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const line = (text: string) =>
    new Promise<void>((resolve) => {
      const check = () =>
        lines.includes(text)
          ? resolve()
          : parent.stdout!.once('data', (chunk: Buffer) => {
              lines.push(...chunk.toString().split('\n'));
              check();
            });
      check();
    });
  try {
    await line('ready');
    const targets = { postgresPid: parent.pid!, generatorPid: process.pid };
    const before = sampleCpu(targets);
    parent.stdin!.write('go\n');
    await line('reaped');
    const after = sampleCpu(targets);
    assert.equal(childrenOf(parent.pid!).length, 0, 'the child has ended');
    const counted = after.get('PostgreSQL')! - before.get('PostgreSQL')!;
    assert.ok(counted >= 30, `the ended child's 30 ticks are in "PostgreSQL" (${counted})`);
  } finally {
    parent.kill('SIGKILL');
  }
});

test('a sample of processes that have gone leaves their parts out instead of failing', { timeout: 30_000 }, async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  const sample = sampleCpu({ venuePid: child.pid!, serverPid: child.pid!, postgresPid: child.pid!, generatorPid: process.pid });
  assert.deepEqual([...sample.keys()].sort(), ['PostgreSQL', 'generator', 'server']);
  assert.equal(sample.get('server'), 0);
  assert.ok(sample.get('generator')! > 0);
});

test("the machine's states over a window, from /proc/stat's cpu line", () => {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const before = parseMachine('cpu  1000 10 300 5000 40 0 50 7 0 0\ncpu0 500 5 150 2500 20 0 25 3 0 0\n');
  const after = parseMachine('cpu  1300 10 400 5060 140 0 60 27 0 0\ncpu0 650 5 200 2530 70 0 30 13 0 0\n');
  assert.deepEqual(before, { busy: 1360, idle: 5000, iowait: 40, steal: 7 });
  // 410 busy ticks (4.1 s) over a 2 s window: 2.05 cores; 100 in I/O wait: 0.5.
  assert.deepEqual(machineUse(before, after, 2_000), { busyCores: 2.05, iowaitCores: 0.5, stealCores: 0.1, idleCores: 0.3 });
  assert.throws(() => parseMachine('cpu0 1 2 3 4 5 6 7 8\n'), /cpu line/);
  assert.throws(() => machineUse(before, after, 0), /window/);
  const use = cpuPerCommand(new Map([['gateways', 0]]), new Map([['gateways', 100]]), 100, 2_000, { before, after });
  assert.deepEqual(use.machine, { busyCores: 2.05, iowaitCores: 0.5, stealCores: 0.1, idleCores: 0.3 });
  assert.equal(cpuPerCommand(new Map(), new Map([['gateways', 1]]), 1, 1).machine, null, 'no machine samples, no machine figures');
  const live = sampleMachine();
  assert.ok(live !== null && live.busy > 0 && live.idle >= 0, 'this machine has a /proc/stat');
});

test('sleeps per answered command: a status file read for its voluntary switches, and a thread named as a shard that sleeps 30 times counted in its part', { timeout: 30_000 }, async () => {
  const status = 'Name:\tshard-0\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n';
  assert.equal(statusSleeps(status), 1234, 'the voluntary count, not the involuntary one');
  assert.throws(() => statusSleeps('Name:\tx\n'), /voluntary_ctxt_switches/);
  assert.deepEqual(
    sleepsPerCommand(
      new Map([
        ['shards', 100],
        ['gateways', 50],
        ['read thread', 9],
      ]),
      new Map([
        ['shards', 400],
        ['gateways', 60],
        ['read thread', 3],
        ['generator', 20],
      ]),
      200,
    ),
    {
      shards: 1.5,
      gateways: 0.05,
      'read thread': 0,
      generator: 0.1,
    },
  );
  assert.throws(() => sleepsPerCommand(new Map(), new Map(), 0), /answered commands/);

  // Each Atomics.wait with a timeout blocks the thread: one sleep at least.
  const sleeper = new Worker(
    `const { writeFileSync } = require('node:fs');
     const { parentPort } = require('node:worker_threads');
     writeFileSync('/proc/thread-self/comm', 'shard-9');
     const cell = new Int32Array(new SharedArrayBuffer(4));
     parentPort.on('message', () => {
       for (let k = 0; k < 30; k++) Atomics.wait(cell, 0, 0, 2);
       parentPort.postMessage('slept');
     });
     parentPort.postMessage('named');`,
    { eval: true },
  );
  try {
    const targets = { venuePid: process.pid, generatorPid: process.pid };
    const slept = await aroundWork(sleeper, () => sampleSleeps(targets));
    const shards = slept('shards');
    assert.ok(shards >= 30, `the shard-named thread's 30 waits are in "shards" (${shards})`);
    // The whole process (every thread added up, the sleeper's included) slept at least as often.
    const whole = slept('generator');
    assert.ok(whole >= shards, `the process's threads together slept ${whole} times`);
  } finally {
    await sleeper.terminate();
  }
});

test(
  'waits for a core per answered command: a schedstat line read for its run-queue wait, and more threads spinning than there are cores counted as waiting in their part',
  { timeout: 30_000 },
  async () => {
    // run time (ns), run-queue wait (ns), time slices
    assert.deepEqual(parseSchedstat('3419081223 1183340957 27513\n'), { runNs: 3419081223, waitNs: 1183340957 });
    assert.throws(() => parseSchedstat('12 x 3\n'), /schedstat/);
    assert.throws(() => parseSchedstat('-1 5 3\n'), /schedstat/);
    assert.throws(() => parseSchedstat('12\n'), /schedstat/);
    // 300 µs and 50 µs waited over 200 answers, in ns; a part that only shrank (a thread gone) counts 0.
    assert.deepEqual(
      waitsPerCommand(
        new Map([
          ['PostgreSQL', 1_000_000],
          ['gateways', 5_000_000],
        ]),
        new Map([
          ['PostgreSQL', 61_000_000],
          ['gateways', 15_000_000],
          ['shards', 4_000_000],
        ]),
        200,
      ),
      {
        PostgreSQL: 300,
        gateways: 50,
        shards: 20,
      },
    );
    assert.deepEqual(waitsPerCommand(new Map([['gateways', 9_000]]), new Map([['gateways', 3_000]]), 1), { gateways: 0 });
    assert.throws(() => waitsPerCommand(new Map(), new Map(), 0), /answered commands/);

    // One thread more than there are cores, each spinning for 300 ms of the clock: at any
    // moment one of them at least is runnable without a core, so together they wait 300 ms
    // at least (more when anything else runs).
    const spinners = Array.from(
      { length: os.availableParallelism() + 1 },
      () =>
        new Worker(
          `const { writeFileSync } = require('node:fs');
       const { parentPort } = require('node:worker_threads');
       writeFileSync('/proc/thread-self/comm', 'shard-8');
       parentPort.on('message', () => {
         const end = Date.now() + 300;
         while (Date.now() < end);
         parentPort.postMessage('spun');
       });
       parentPort.postMessage('named');`,
          { eval: true },
        ),
    );
    try {
      await Promise.all(spinners.map((worker) => new Promise((resolve) => worker.once('message', resolve))));
      const targets = { venuePid: process.pid, generatorPid: process.pid };
      const before = sampleWaits(targets);
      const done = spinners.map((worker) => new Promise((resolve) => worker.once('message', resolve)));
      for (const worker of spinners) worker.postMessage('spin');
      await Promise.all(done);
      const after = sampleWaits(targets);
      const shardsMs = ((after.get('shards') ?? 0) - (before.get('shards') ?? 0)) / 1e6;
      assert.ok(shardsMs >= 150, `the spinning shard-named threads waited ${shardsMs} ms for a core`);
      const wholeMs = ((after.get('generator') ?? 0) - (before.get('generator') ?? 0)) / 1e6;
      assert.ok(wholeMs >= shardsMs, `the process's threads together waited ${wholeMs} ms`);
    } finally {
      await Promise.all(spinners.map((worker) => worker.terminate()));
    }
  },
);

test("PostgreSQL's CPU by process: a child named in the map under its name, an unnamed one and the parent under 'other'", { timeout: 60_000 }, async () => {
  // The named child burns 400 ms of its own CPU (not of the clock: a busy machine would give it
  // less), and only between the two samples: it starts on a line from us and says when it is done.
  const named = spawn(
    process.execPath,
    [
      '-e',
      `process.stdin.once('data', () => { const end = process.cpuUsage().user + 400_000; let x = 0; while (process.cpuUsage().user < end) x++; process.stdout.write('burnt\\n'); }); process.stdout.write('ready\\n');`,
    ],
    { stdio: ['pipe', 'pipe', 'ignore'] },
  );
  const unnamed = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30_000);'], { stdio: 'ignore' });
  const line = (text: string) =>
    new Promise<void>((resolve) => {
      let seen = '';
      const onData = (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes(text)) {
          named.stdout!.off('data', onData);
          resolve();
        }
      };
      named.stdout!.on('data', onData);
    });
  try {
    await line('ready');
    for (let tries = 0; !childrenOf(process.pid).includes(unnamed.pid!); tries++) {
      assert.ok(tries < 100, 'the unnamed child started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const names = new Map([[named.pid!, 'venue-journal']]);
    const before = samplePostgresCpu(process.pid, names);
    const burnt = line('burnt');
    named.stdin!.write('go\n');
    await burnt;
    const after = samplePostgresCpu(process.pid, names);
    const journal = (after.get('venue-journal') ?? 0) - (before.get('venue-journal') ?? 0);
    assert.ok(journal >= 30, `the named child's CPU is under its name (${journal} ticks)`);
    assert.ok(after.has('other'), 'the parent and the unnamed child are "other"');
    assert.deepEqual([...after.keys()].sort(), ['other', 'venue-journal']);
  } finally {
    named.kill('SIGKILL');
    unnamed.kill('SIGKILL');
  }
});

test("PostgreSQL's statistics per answered command: each counter's growth over the window, never below zero", () => {
  assert.deepEqual(statsPerCommand({ transactions: 100, walBytes: 5_000, walSyncs: 7 }, { transactions: 160, walBytes: 305_000, walSyncs: 5 }, 1000), {
    transactions: 0.06,
    walBytes: 300,
    walSyncs: 0,
  });
  assert.throws(() => statsPerCommand({}, {}, 0), RangeError);
});
