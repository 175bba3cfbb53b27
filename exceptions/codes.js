'use strict'

/**
 * Every stable error code, declared once: the error classes and the CLI
 * raise these, docs/errors.md's table is rendered from here (`npm run
 * docs`), and test/unit/docs.test.js fails on a code raised anywhere that
 * is not here, or declared here and never raised. `class`: the error class
 * that carries it; `by`: who raises it; `when`: what it means.
 */
const ERROR_CODES = Object.freeze({
  ERR_INVALID_CONFIG: { class: 'InvalidConfigError', by: 'configs, the CLI', when: 'bad flags; `problems` lists each' },
  ERR_INVALID_OPTION: { class: 'InvalidOptionError', by: 'the library', when: 'a bad programmatic option or definition (the value in the message; `closest` names the option an unknown key most likely meant)' },
  ERR_WORKER_DOWN: { class: 'WorkerDownError', by: 'the master', when: 'a worker failed to start, or every worker is down. A worker module that does not load (a syntax error, a throw while it loads or in its constructor) is named with the file and line at fault, in the message (`worker failed to start: /app/worker.js:12: SyntaxError: Unexpected token \'}\'`) and as `file` and `line`; `workerCode` is the code of what the worker threw, if it had one (`ERR_INVALID_OPTION`: it refused an option, e.g. a `--retention-for` naming a collection it does not write; `collector run` says so as an invalid configuration and exits 2)' },
  ERR_DECODE: { class: 'DecodeError', by: 'decoders', when: 'a message could not be decoded; `reason` names why (counted under `dropped.<reason>`)' },
  ERR_DECODE_REASON: { class: 'CollectorError', by: 'workers (a collector\'s code)', when: 'a `DecodeError` or `dropMessage` given a reason that cannot name a counter (a token of up to 64 letters, digits, `_`, `.` and `-`, starting with a letter) or that is one of the framework\'s own (`kernel`, `total`, `workerLost`…, lib/shared/drop-reasons.js): thrown where it is made; at load the collector is refused, in a message the message fails (counted `failed`, the worker logs why)' },
  ERR_DATABASE: { class: 'DatabaseError', by: 'the master, workers', when: 'no database configured, or the embedded one could not start; in a worker\'s log, a write that failed, or (`reason: \'unaccounted\'`) whose reply did not account for every operation sent' },
  ERR_LISTEN: { class: 'ListenError', by: 'the master', when: 'the first bind failed (port in use, no permission, no such address): `host:port` and the cause; `cause` is the system error' },
  ERR_BUFFER: { class: 'BufferError', by: 'the master', when: 'the disk buffer cannot be used: its directory cannot be created or written, or another live collector holds it (`dir` names it; give each collector its own `bufferDir`)' },
  ERR_WEB_CONFIG: { class: 'WebConfigError', by: 'the master, configs', when: 'the `metricsWebConfig` file cannot be used (missing, bad YAML, unknown key, unreadable or mismatched certificate, a password hash that is not bcrypt): the file and the key, never a hash' },
  ERR_USAGE: { class: 'CollectorError', by: 'the CLI', when: 'a bad command line (exit 2)' },
  ERR_HELP: { class: 'CollectorError', by: 'the CLI', when: '`--help` where a command expects its name or collector (`collector stop --help`): never shown as an error, its usage goes to stdout, exit 0' },
  ERR_UNKNOWN_COLLECTOR: { class: 'CollectorError', by: 'the CLI', when: 'no such built-in collector, and no module at the path given (exit 2)' },
  ERR_INVALID_COLLECTOR: { class: 'CollectorError', by: 'the CLI', when: 'the collector module does not load, or does not export `{ Collector, Config }` (the contract app/collector-registry.js checks), or its definition is refused (an unknown key, a missing decode): exit 2, under `collector run` and `collector start` alike; a module it requires that is not installed is named with the file that requires it' },
  ERR_COLLECTOR_EXISTS: { class: 'CollectorError', by: 'the launcher', when: '`collector start` of a name PM2 already has' },
  ERR_NO_SUCH_COLLECTOR: { class: 'CollectorError', by: 'the launcher', when: 'a command names a collector PM2 does not have' },
  ERR_NO_DEAD_LETTERS: { class: 'CollectorError', by: 'the CLI', when: '`collector replay`: the dead-letter directory looked in does not exist (a mistyped name, or a collector started with another directory)' },
  ERR_NAME_IN_USE: { class: 'CollectorError', by: 'the CLI', when: 'a collector starts under a name another running collector has (in the same stats directory): exit 1, nothing started' },
  ERR_COLLECTOR_NOT_RUNNING: { class: 'CollectorError', by: 'the launcher', when: 'a command that needs a running collector found it stopped' },
  ERR_COLLECTOR_START: { class: 'CollectorError', by: 'the launcher', when: 'the collector did not become ready (its log says why)' },
  ERR_COLLECTOR_RUNNING: { class: 'CollectorError', by: 'the launcher', when: '`collector start NAME` of one already online' },
  ERR_DB_RUNNING: { class: 'CollectorError', by: 'the CLI', when: '`collector db start`: the embedded database is already running' },
  ERR_DB_START: { class: 'CollectorError', by: 'the CLI', when: '`collector db start`: the embedded database could not start' },
  ERR_RESTART_TIMEOUT: { class: 'CollectorError', by: 'the launcher', when: 'a rolling restart did not finish in time' },
  ERR_RESTART_FAILED: { class: 'CollectorError', by: 'the launcher', when: 'a rolling restart failed in the collector (a worker that no longer starts), with its reason' },
  ERR_SECRET_IN_ARGS: { class: 'CollectorError', by: 'the launcher', when: 'a secret flag on a PM2 command line (use its environment variable)' },
  ERR_PM2: { class: 'CollectorError', by: 'the launcher', when: 'a PM2 call failed: the method and PM2\'s message' },
  ERR_PM2_HOME: { class: 'CollectorError', by: 'the launcher', when: 'the PM2 home (`PM2_HOME`, else `~/.pm2`) cannot be created or written (a read-only mount, another user\'s): `home` names it; set `PM2_HOME` to a writable directory' }
})

module.exports = { ERROR_CODES }
