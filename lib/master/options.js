'use strict'

const os = require('node:os')
const path = require('node:path')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const protocols = require('../protocols')
const { strategies } = require('./distribution')
const { validateFraming, FRAMINGS } = require('../protocols/framing')
const { SPLITS } = require('./split')
const { createNoopLogger, isLogger } = require('../shared/logger')
const { closestName } = require('../shared/closest-name')
// A parsed config carries the names of its flags under CONFIG_KEYS, so that
// a collector's own flags pass as options (configs/argv-config.js sets it).
const { CONFIG_KEYS } = require('../shared/symbols')
const NativeUdpSocket = require('../protocols/native-udp-socket')
const { receiverFor } = require('../protocols/udp')
const { checkTlsOptions } = require('../protocols/tls-options')
const { allowListProblem } = require('../shared/allow-list')
const { SYNC_POLICIES } = require('./journal')
const { defaultBufferDir, defaultDeadLetterDir } = require('../shared/state-dir')

const UDP_RECEIVERS = ['auto', 'native', 'dgram']
const RECEIVE_MODES = ['master', 'reuseport']
// node:dgram has `reusePort` from 22.12 (the native receiver sets
// SO_REUSEPORT itself); Linux is where the kernel spreads a reuseport
// group's datagrams over its sockets by 4-tuple.
const DGRAM_REUSE_PORT_SINCE = [22, 12]
// A young generation of V8's default size (16 MiB semi-spaces on Node 20, 32
// on 26) and its default old-generation growth more than doubled a worker's
// resident set under load for garbage it would collect anyway (measured with
// benchmarks/chaos.js --only syslog-run; flags present in Node 20 to 26).
const WORKERS_NODE_ARGS = Object.freeze(['--max-semi-space-size=2', '--heap-growing-percent=20'])
const NAME_PATTERN = /^[A-Za-z0-9][\w.-]*$/
// A name becomes file and directory names (stats, disk buffer, dead
// letters, PM2's logs: `<name>-out.log`), each at most 255 bytes.
const MAX_NAME_LENGTH = 100

/** What is wrong with a collector name, or undefined. */
function nameProblem (name) {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) return 'must be letters, digits, ".", "_" and "-", starting with a letter or digit'
  if (name.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters (it names files), this has ${name.length}`
  return undefined
}
const AFFINITIES = Object.freeze(['prefer', 'strict'])
// The protocols whose listeners check `allow`.
const ALLOW_PROTOCOLS = ['udp', 'tcp_server']

/**
 * Every LoadBalancer option, declared once: its type (a flag type of
 * lib/shared/value-types.js), default, integer range, choices (a function, so
 * that what a registry gains later is choosable), short aliases, group and
 * description. `flag` is the command-line name when it differs from the
 * option's, `false` for options that only code can pass. The config's flags
 * (configs/load-balancer-flags.js), `normalizeOptions`, the help text and
 * the tables of docs/options.md (`npm run docs`) all come from here.
 */
const OPTIONS = declare({
  name: { type: 'string', default: 'collector', alias: 'n', group: 'General', description: 'collector name (process, log and stats-file name): letters, digits, ".", "_", "-"' },
  protocol: { type: 'string', default: 'udp', choices: () => protocols.list(), group: 'Listener', description: 'udp datagrams, tcp_server (accept connections), tcp_client (connect out), or one registered with protocols.register()' },
  host: { type: 'string', default: '127.0.0.1', group: 'Listener', description: 'address to bind (tcp_client: to connect to); 0.0.0.0 to receive from the network' },
  port: { type: 'port', default: 0, range: [0, 65535], alias: 'p', group: 'Listener', description: 'port to bind (tcp_client: to connect to); 0 = ephemeral' },
  framing: { type: 'string', default: 'newline', choices: () => FRAMINGS, group: 'Listener', description: 'how TCP streams are split into messages (code may also pass a function)' },
  receive: { type: 'string', default: 'master', choices: () => RECEIVE_MODES, group: 'Listener', description: 'udp: who binds the port. master: the master receives and hands batches to the workers (distribution, disk buffer, redelivery when a worker dies); reuseport (Linux; Node >= 22.12 or the native receiver): each worker binds the port itself (SO_REUSEPORT) and processes what it receives, no master hop; the kernel picks the worker by sender address and port, so no distribution of ours, no disk buffer or allow, and what a worker held when it died is lost (dropped.workerLost)' },
  split: { type: 'string', default: 'none', choices: () => SPLITS, group: 'Listener', description: 'lines: each line of a datagram or frame (ended by LF or CR LF) that is not blank is a message of its own, distributed on its own (StatsD sends several metrics per datagram); counted per line, a datagram no worker can take as one message' },
  udpReceiver: { type: 'string', default: 'auto', choices: () => UDP_RECEIVERS, group: 'Listener', description: 'UDP receive path: native recvmmsg (built on install), node:dgram, or auto = native when built' },
  recvBufferSize: { type: 'integer', default: 8 * 1024 * 1024, range: [0, 0x7fffffff], group: 'Listener', description: 'UDP kernel receive buffer in bytes (capped by net.core.rmem_max); 0 = the system default' },
  maxFrameBytes: { type: 'size', default: 65536, range: [1, 0x7fffffff], group: 'Listener', description: 'largest TCP frame accepted (k, m, g: powers of 1024); larger ones are dropped and counted, the connection survives' },
  maxConnections: { type: 'integer', default: 1024, range: [1, 1e6], group: 'Listener', description: 'tcp_server: concurrent connections accepted' },
  maxConnectionsPerSource: { type: 'integer', default: 32, range: [1, 1e6], group: 'Listener', description: 'tcp_server: concurrent connections from one remote address (raise it behind a NAT or proxy)' },
  reclaimIdleAfter: { type: 'duration', default: 10000, range: [0, 86400000], group: 'Listener', description: 'tcp_server: a connection that would pass a connection limit first closes the one (of its address; for max-connections, of any) longest without a complete frame, if that long (events.connectionsEvicted); 0 = refuse instead' },
  frameTimeout: { type: 'duration', default: 60000, range: [0, 86400000], group: 'Listener', description: 'close a TCP connection that has held an unfinished frame this long (dropped.partial, events.frameTimeouts); 0 = never' },
  allow: { type: 'list', group: 'Listener', description: 'only these sources may send: CIDR,... (IPv4/IPv6 addresses and prefixes, e.g. 10.0.0.0/8,fd00::/8): other datagrams are dropped (dropped.notAllowed), other connections closed at accept; udp and tcp_server only (a tcp_client connects out); default: everyone' },
  idleTimeout: { type: 'duration', default: 300000, range: [0, 86400000], group: 'Listener', description: 'tcp_server: close connections idle this long (closed whole, the slot freed); 0 = never. A tcp_client connection stays while its peer is quiet, and TCP keepalive (a first probe after 60 s idle) finds a peer gone without a word' },
  retry: { type: 'boolean', default: true, group: 'Listener', description: 'reopen the listener after socket errors once running; a tcp_client also connects again with backoff while its server is away at start (start() resolves once connected; a stop() meanwhile rejects it as stopped)' },
  retryDelay: { type: 'duration', default: 5000, range: [1, 3600000], group: 'Listener', description: 'first listener restart delay; grows x1.5 per consecutive failure, up to 5 minutes (or this delay, when longer)' },
  tls: { type: 'boolean', default: false, group: 'TLS', description: 'tcp_client: connect with TLS, verifying the server against Node\'s bundled CAs (plus NODE_EXTRA_CA_CERTS) unless --tls-ca (implied by --tls-ca and --tls-cert)' },
  tlsCert: { type: 'path', group: 'TLS', description: 'PEM certificate (chain) to present: turns TLS on (tcp_server needs it and --tls-key; tcp_client presents it as a client certificate); re-read on restart (tcp_client: at each connect)' },
  tlsKey: { type: 'path', group: 'TLS', description: 'PEM private key (unencrypted) of --tls-cert' },
  tlsCa: { type: 'path', group: 'TLS', description: 'PEM CA certificate(s): tcp_server then requires client certificates signed by them (mutual TLS); tcp_client verifies the server against them' },
  tlsHandshakeTimeout: { type: 'duration', default: 10000, range: [100, 600000], group: 'TLS', description: 'a TLS handshake not finished by then is closed, its connection slot freed (tlsRejected.handshakeTimeout)' },
  tlsAllowedNames: { type: 'list', group: 'TLS', description: 'tcp_server with --tls-ca: client certificate names (subject CN or DNS name) accepted, e.g. host.example.com,*.example.net (* = one leftmost label); default: any verified client' },
  worker: { flag: 'workername', type: 'path', alias: ['w', 'worker'], group: 'Workers', description: 'path of the worker module: a Worker subclass, an object with doWork(), or a factory' },
  workerOptions: { flag: false, default: {}, description: 'passed to the worker constructor (JSON; travels in the environment, not argv)' },
  instances: { type: 'integer', default: 'auto', range: [1, 1024], alias: 'i', keywords: { auto: () => os.availableParallelism() }, group: 'Workers', description: 'worker processes; auto = one per CPU' },
  distribution: { type: 'string', default: 'round-robin', choices: () => Object.keys(strategies), group: 'Workers', description: 'how messages are assigned to workers (code may also pass a function)' },
  affinity: { type: 'string', default: 'prefer', choices: () => AFFINITIES, group: 'Workers', description: 'hash: while a key\'s worker is down (respawning) or saturated (at its --max-in-flight or memory budget), prefer: its messages go to another worker; strict: they wait for that slot\'s worker (on disk with the buffer; without it, in memory while it is down, dropped as queueFull while it is saturated), so state a worker keeps per key is never split between two (the default of a collector definition with keep, and of the hep collector)' },
  batchSize: { type: 'integer', default: 256, range: [1, 4096], group: 'Workers', description: 'messages per IPC batch to a worker' },
  batchDelay: { type: 'integer', default: 10, range: [0, 1000], group: 'Workers', description: 'ms a batch waits to fill before it is sent (0 = end of the event-loop turn); the native receiver also waits up to half of it (at most 5 ms) between wake-ups that found few datagrams. Longer batches cost less per message at modest rates (10 against 2: 0.8x the CPU per message at 10,000 syslog lines/s) for that much more latency, and a master killed loses the batch being filled (docs/disk-buffer.md)' },
  maxInFlight: { type: 'integer', default: 100000, range: [1, 1e9], group: 'Workers', description: 'per worker: messages handed to it and not yet acknowledged (stored)' },
  memoryBudget: { type: 'size', default: 8 * 1024 ** 2, range: [0, 2 ** 50], group: 'Buffer', description: 'with the disk buffer on: bytes the workers hold of messages not yet stored (acknowledged), shared among them (k, m, g): a batch not yet taken as its bytes, what a worker took as it says it holds it (a document as its BSON, an update held as 1 KiB); past it new batches wait on disk, and a batch sent keeps its bytes on disk only, so a database slower than the input grows neither the master\'s memory nor the workers\' (0: no bound but --max-in-flight). Without the buffer only --max-in-flight bounds them' },
  workersNodeArgs: { type: 'list', default: WORKERS_NODE_ARGS, group: 'Workers', description: 'Node/V8 flags of the worker processes, after the master\'s own (the later of two wins: --workers-node-args=--max-semi-space-size=0,--heap-growing-percent=0 gives V8\'s defaults back). The default keeps a worker\'s heap near what it holds (2 MiB semi-spaces, the old generation grown 20 % per full GC): with 60-byte syslog lines at 10,000 msg/s a worker peaks at about 100 MiB instead of 170 on Node 26, 80 instead of 104 on Node 20, for 5-20 % more worker CPU; with realistic ~277-byte lines (two workers, Node 26, syslog) at 105-110 MiB at 10,000/s and 125-134 MiB at 40,000/s (docs/benchmarks.md)' },
  respawnDelay: { type: 'duration', default: 100, range: [0, 3600000], group: 'Workers', description: 'first respawn delay of a crash-looping worker (doubles per crash)' },
  maxCrashes: { type: 'integer', default: 10, range: [0, 1e6], group: 'Workers', description: 'crashes within crash-window after which a worker slot is given up' },
  crashWindow: { type: 'duration', default: 60000, range: [1, 86400000], group: 'Workers', description: 'window in which crashes are counted' },
  drainTimeout: { type: 'duration', default: 30000, range: [1, 86400000], group: 'Workers', description: 'a worker not drained by then is killed at stop; what it had not stored is kept in the disk buffer, or as dead letters (deadLetteredBy.shutdown) without it' },
  buffer: { type: 'boolean', default: false, group: 'Buffer', description: 'disk buffer: each batch is written to --buffer-dir before it goes to a worker; while the workers are full (database slow or away) messages wait there instead of being dropped, and a start replays what a previous run left unstored (on by default in the CLI for collectors that store into MongoDB)' },
  bufferDir: { type: 'path', group: 'Buffer', description: 'where the disk buffer lives, one directory per collector (default: <PM2 home>/collector-buffer/<name>, so run and start of one name share it)' },
  bufferMaxBytes: { type: 'size', default: 1024 ** 3, range: [65536, 2 ** 50], group: 'Buffer', description: 'disk buffer bound (k, m, g: powers of 1024): when it holds this much, new messages are dropped (dropped.bufferFull) and TCP senders paused' },
  deadLetterDir: { type: 'path', group: 'Buffer', description: 'where batches given up are kept (poison: workers kept ending while processing them), to be listed by collector status and replayed by collector replay (default: <buffer-dir>/dead-letter with the disk buffer, else <PM2 home>/collector-dead-letter/<name>)' },
  bufferSync: { type: 'string', default: 'none', choices: () => SYNC_POLICIES, group: 'Buffer', description: 'none: the page cache only (a crash of the collector loses nothing it had read, only what its socket held then and what comes while it restarts, docs/disk-buffer.md; of the machine, what the kernel had not written); interval: fdatasync each second (a machine crash loses at most that second; costs about 30 % of the loss-free rate today, the sync runs on the master\'s thread); batch: fdatasync every batch' },
  metricsPort: { type: 'port', range: [0, 65535], group: 'Operations', description: 'serve /metrics (Prometheus), /healthz and /readyz on this port; off unless given (0 = ephemeral)' },
  metricsHost: { type: 'string', default: '127.0.0.1', group: 'Operations', description: 'address of the metrics endpoints' },
  metricsWebConfig: { type: 'path', group: 'Operations', description: 'YAML file giving the metrics endpoints TLS and basic auth (the Prometheus exporter toolkit\'s web config: tls_server_config, basic_auth_users with bcrypt hashes; paths in it are relative to it); re-read on restart' },
  logger: { flag: false, description: 'any pino-compatible logger; worker logs are forwarded to it (default: none)' }
})

function declare (table) {
  for (const [name, decl] of Object.entries(table)) {
    if (decl.flag !== false) decl.flag = decl.flag || name
    if (decl.flag) decl.env = envNameOf(decl.flag)
    Object.freeze(decl)
  }
  return Object.freeze(table)
}

/** The environment variable a flag may also come from: maxInFlight → COLLECTOR_MAX_IN_FLIGHT. */
function envNameOf (flag) {
  return `COLLECTOR_${flag.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`
}

/** Defaults of every LoadBalancer option (see docs/options.md). */
const DEFAULTS = Object.freeze(Object.fromEntries(Object.entries(OPTIONS).map(([name, d]) => [name, d.default])))

/** The range of every integer option (durations in ms). */
const INTEGER_RANGES = Object.freeze(Object.fromEntries(Object.entries(OPTIONS).filter(([, d]) => d.range).map(([name, d]) => [name, d.range])))

/**
 * Merges options (or a parsed config object) over the defaults and checks
 * them once; throws InvalidOptionError naming the bad option and value, or
 * an unknown key and the option it most likely meant.
 * @param {object} input
 * @param {Iterable<string>} [extraKeys] options a subclass accepts beyond these
 */
function normalizeOptions (input = {}, extraKeys = []) {
  checkKeys(input, extraKeys)
  const options = { ...DEFAULTS, workerOptions: {} }
  for (const [key, value] of Object.entries(input)) if (value !== undefined) options[key] = value
  if (options.worker === undefined && input.workername !== undefined) options.worker = input.workername
  if (options.instances === 'auto') options.instances = OPTIONS.instances.keywords.auto()
  for (const [key, [min, max]] of Object.entries(INTEGER_RANGES)) {
    if (options[key] === undefined && DEFAULTS[key] === undefined) continue // optional, off
    checkInteger(key, options[key], min, max)
  }
  checkChoices(options)
  checkTlsOptions(options)
  checkAllow(options)
  checkWebConfig(options)
  checkBuffer(options)
  checkReceive(options)
  checkWorkerNodeArgs(options)
  options.worker = resolveWorkerModule(options.worker)
  options.retry = Boolean(options.retry)
  options.logger = options.logger || createNoopLogger()
  if (!isLogger(options.logger)) throw new InvalidOptionError('logger', '[object]', 'must have trace/debug/info/warn/error/fatal methods (pino-compatible)')
  return options
}

function checkKeys (input, extraKeys) {
  const known = new Set([...Object.keys(OPTIONS), 'workername', ...extraKeys, ...(input[CONFIG_KEYS] || [])])
  for (const key of Object.keys(input)) {
    if (!known.has(key)) throw InvalidOptionError.unknown(key, closestName(key, known))
  }
}

/** Absolute path of a worker module, checked in the master before forking. */
function resolveWorkerModule (worker, base = process.cwd()) {
  if (typeof worker !== 'string' || worker.length === 0) {
    throw new InvalidOptionError('worker', worker, 'must be the path of a worker module')
  }
  const candidate = path.isAbsolute(worker) || worker.startsWith('.') ? path.resolve(base, worker) : worker
  try {
    return require.resolve(candidate)
  } catch {
    throw new InvalidOptionError('worker', worker, `must be a module that can be loaded (looked for ${candidate})`)
  }
}

function checkInteger (key, value, min, max) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(key, value, `must be an integer from ${min} to ${max}`)
  }
}

// The file is read and checked now (WebConfigError, ERR_WEB_CONFIG), and
// again by the metrics server when it starts and on each restart().
function checkWebConfig (options) {
  const file = options.metricsWebConfig
  if (file === undefined) return
  if (typeof file !== 'string' || file.length === 0) throw new InvalidOptionError('metricsWebConfig', file, 'must be the path of a web config file (YAML)')
  if (options.metricsPort === undefined) throw new InvalidOptionError('metricsWebConfig', file, 'needs metricsPort: the metrics endpoint is off without it')
  options.metricsWebConfig = path.resolve(file)
  require('./web-config').loadWebConfig(options.metricsWebConfig)
}

function checkBuffer (options) {
  options.buffer = Boolean(options.buffer)
  if (!SYNC_POLICIES.includes(options.bufferSync)) throw new InvalidOptionError('bufferSync', options.bufferSync, `must be one of ${SYNC_POLICIES.join(', ')}`)
  for (const key of ['bufferDir', 'deadLetterDir']) {
    if (options[key] === undefined) continue
    if (typeof options[key] !== 'string' || options[key].length === 0) throw new InvalidOptionError(key, options[key], 'must be the path of a directory')
    options[key] = path.resolve(options[key])
  }
  if (options.bufferDir === undefined && options.buffer) options.bufferDir = defaultBufferDir(options.name)
  if (options.deadLetterDir === undefined) options.deadLetterDir = defaultDeadLetterDir(options.name, options.buffer ? options.bufferDir : null)
}

// receive 'reuseport': what the master does not see it cannot do. Each
// refusal says what the mode gives up; a distribute() or key() of a
// subclass is refused by the LoadBalancer (it knows the class).
function checkReceive (options) {
  if (!RECEIVE_MODES.includes(options.receive)) throw new InvalidOptionError('receive', options.receive, `must be one of ${RECEIVE_MODES.join(', ')}`)
  if (!SPLITS.includes(options.split)) throw new InvalidOptionError('split', options.split, `must be one of ${SPLITS.join(', ')}`)
  if (options.receive === 'master') return
  // Every reason at once (QA: StatsD's were said one per try, the last one
  // its split lines, which it cannot do without).
  const reasons = []
  const refuse = (why) => reasons.push(why)
  if (options.protocol !== 'udp') refuse(`applies to protocol udp only (${options.protocol} connections are accepted by the master)`)
  if (process.platform !== 'linux') refuse(`needs Linux, whose kernel spreads one port's datagrams over several sockets (running on ${process.platform})`)
  if (options.buffer) refuse('cannot be combined with the disk buffer (on by default for the CLI\'s MongoDB collectors: --no-buffer): the workers receive, the master never holds a datagram to write there')
  if (options.distribution !== 'round-robin') refuse(`cannot honour distribution ${typeof options.distribution === 'function' ? 'given as a function' : JSON.stringify(options.distribution)}: the kernel picks the worker by the sender's address and port, so neither round-robin nor affinity across senders (one call's two directions) holds`)
  if (options.allow !== undefined) refuse('cannot be combined with allow, which the master checks: in this mode the master sees no datagram')
  if (options.split !== 'none') refuse(`cannot be combined with split ${options.split}, which the master does: in this mode the master sees no datagram`)
  if (receiverFor(options.udpReceiver) === 'dgram' && !nodeHasDgramReusePort()) refuse(`needs Node >= ${DGRAM_REUSE_PORT_SINCE.join('.')} for node:dgram's reusePort (running ${process.versions.node}), or the native receiver (node native/build.js)`)
  if (reasons.length > 0) throw new InvalidOptionError('receive', options.receive, reasons.join('; and it '))
}

function nodeHasDgramReusePort (version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number)
  const [wantMajor, wantMinor] = DGRAM_REUSE_PORT_SINCE
  return major > wantMajor || (major === wantMajor && minor >= wantMinor)
}

// Checked here, compiled by the LoadBalancer; an empty list is refused
// rather than read as "nobody" or "everyone".
function checkAllow (options) {
  if (options.allow === undefined) return
  // The built-in listeners that take senders check it; a tcp_client connects
  // out, and a registered protocol's dispatch() is not filtered.
  if (!ALLOW_PROTOCOLS.includes(options.protocol)) throw new InvalidOptionError('allow', options.allow, `applies to ${ALLOW_PROTOCOLS.join(' and ')} (senders that reach us), not to protocol ${options.protocol}`)
  if (typeof options.allow === 'string') options.allow = options.allow.split(',')
  if (!Array.isArray(options.allow) || options.allow.length === 0) throw new InvalidOptionError('allow', options.allow, 'must list at least one address or prefix (leave it out to let everyone send)')
  const problem = allowListProblem(options.allow)
  if (problem) throw new InvalidOptionError('allow', problem.entry, `has an entry that is not an address or prefix (${problem.reason})`)
  options.allow = Object.freeze(options.allow.map((entry) => entry.trim()))
}

function checkWorkerNodeArgs (options) {
  const args = typeof options.workersNodeArgs === 'string' ? options.workersNodeArgs.split(',') : options.workersNodeArgs
  if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string' || !arg.trim().startsWith('-'))) {
    throw new InvalidOptionError('workersNodeArgs', args, 'must be a list of Node or V8 flags, each starting with -')
  }
  options.workersNodeArgs = Object.freeze(args.map((arg) => arg.trim()))
}

function checkChoices (options) {
  protocols.get(options.protocol)
  if (typeof options.distribution !== 'function' && !strategies[options.distribution]) {
    throw new InvalidOptionError('distribution', options.distribution, `must be one of ${Object.keys(strategies).join(', ')} or a function`)
  }
  validateFraming(options.framing)
  if (!UDP_RECEIVERS.includes(options.udpReceiver)) throw new InvalidOptionError('udpReceiver', options.udpReceiver, `must be one of ${UDP_RECEIVERS.join(', ')}`)
  if (options.udpReceiver === 'native' && options.protocol === 'udp' && !NativeUdpSocket.available) {
    throw new InvalidOptionError('udpReceiver', options.udpReceiver, `needs the native receiver, which is not built (${NativeUdpSocket.unavailableReason()}); run \`node native/build.js\` or use 'auto'`)
  }
  const badName = nameProblem(options.name)
  if (badName) throw new InvalidOptionError('name', options.name, badName)
  for (const key of ['host', 'metricsHost']) {
    if (typeof options[key] !== 'string' || options[key].length === 0) throw new InvalidOptionError(key, options[key], 'must be a host name or address')
  }
  if (!options.workerOptions || typeof options.workerOptions !== 'object') throw new InvalidOptionError('workerOptions', options.workerOptions, 'must be an object')
}

module.exports = { OPTIONS, DEFAULTS, INTEGER_RANGES, UDP_RECEIVERS, RECEIVE_MODES, nameProblem, nodeHasDgramReusePort, ALLOW_PROTOCOLS, normalizeOptions, envNameOf }
