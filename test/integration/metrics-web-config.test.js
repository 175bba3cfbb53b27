'use strict'
// The metrics endpoint behind the Prometheus exporter toolkit's web config
// (metricsWebConfig): HTTPS with certificates made by the real `openssl`
// CLI, basic auth against bcrypt hashes made by `htpasswd` (apache2-utils,
// the oracle of the hash format), scraped by a real Prometheus server.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const path = require('node:path')
const { LoadBalancer, InvalidOptionError, WebConfigError } = require('../..')
const { startLb, settled, udpSocket, sendPaced, lines, COUNTING, HOST } = require('../helpers/lb')
const { makeTlsFixtures } = require('../helpers/tls-certs')
const { startPrometheus, PROMETHEUS_SKIP } = require('../helpers/prometheus')
const { runCli } = require('../helpers/cli')
const { waitFor } = require('../helpers/wait-for')
const { BasicAuth } = require('../../lib/master/basic-auth')

const HTPASSWD_SKIP = spawnSync('htpasswd', ['-nbBC', '4', 'u', 'p']).status !== 0 && 'htpasswd is not installed (Debian package apache2-utils; .ci/run installs it)'

/** A bcrypt hash of `password` made by htpasswd ($2y$, cost 10), independent of our code. */
function bcryptHash (password, cost = 10) {
  const line = execFileSync('htpasswd', ['-nbBC', String(cost), 'user', password], { encoding: 'utf8' }).trim()
  return line.slice(line.indexOf(':') + 1)
}

// Certificates in a fresh directory; the web config goes in its conf/
// subdirectory and names them relatively (../server.pem): paths are
// relative to the file, not to the working directory.
function fixtures (t) {
  const fx = makeTlsFixtures('metrics-web-config-')
  t.after(() => fx.cleanup())
  fs.mkdirSync(path.join(fx.dir, 'conf'))
  fx.webConfig = path.join(fx.dir, 'conf', 'web.yml')
  fx.write = (text) => fs.writeFileSync(fx.webConfig, text)
  return fx
}

const tlsSection = (cert = 'server', extra = []) => ['tls_server_config:', `  cert_file: ../${cert}.pem`, `  key_file: ../${cert}.key`, ...extra]
const usersSection = (users) => ['basic_auth_users:', ...Object.entries(users).map(([user, hash]) => `  ${user}: ${hash}`)]
const yamlOf = (...sections) => sections.flat().join('\n') + '\n'

const basic = (auth) => `Basic ${Buffer.from(auth).toString('base64')}`

/** One request (a fresh connection each): `{ status, headers, body }`; rejects when the connection is refused or reset. */
function request (port, route, { tls = true, ca, auth, cert, key, localAddress } = {}) {
  const headers = auth ? { authorization: basic(auth) } : {}
  const options = { host: HOST, port, path: route, agent: false, headers, ...(localAddress ? { localAddress } : {}) }
  if (tls) Object.assign(options, { ca: ca && fs.readFileSync(ca), cert: cert && fs.readFileSync(cert), key: key && fs.readFileSync(key) })
  return new Promise((resolve, reject) => {
    const req = (tls ? https : http).request(options, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** A counter series of /metrics text by its labels (0 when absent). */
function seriesValue (text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0
}

function captureLogger () {
  const lines = []
  const at = (level) => (fields, message) => lines.push({ level, fields, message })
  const logger = { trace () {}, debug () {}, info: at('info'), warn: at('warn'), error: at('error'), fatal: at('fatal') }
  logger.child = () => logger
  return { logger, lines }
}

test('a real Prometheus scrapes over HTTPS with basic auth: the target is up and what it stored equals summary(); with a wrong password it gets 401 and the target is down; plain HTTP to the TLS port is refused', { skip: PROMETHEUS_SKIP || HTPASSWD_SKIP, timeout: 120000 }, async (t) => {
  const fx = fixtures(t)
  fx.write(yamlOf(tlsSection(), usersSection({ prometheus: bcryptHash('scrape-secret') })))
  const lb = await startLb(t, { name: 'webconf', metricsPort: 0, metricsWebConfig: fx.webConfig })
  const target = `${HOST}:${lb.metricsAddress().port}`
  const job = (name, scheme, password) => ({
    job_name: name,
    scheme,
    basic_auth: { username: 'prometheus', password },
    ...(scheme === 'https' ? { tls_config: { ca_file: fx.ca.cert } } : {}),
    static_configs: [{ targets: [target] }]
  })
  const prometheus = await startPrometheus(t, [job('secure', 'https', 'scrape-secret'), job('wrong-password', 'https', 'guess'), job('plaintext', 'http', 'scrape-secret')])
  const secure = await prometheus.scrapedTarget('secure')
  assert.equal(secure.health, 'up', secure.lastError)
  assert.equal(secure.scrapeUrl, `https://${target}/metrics`)
  const wrong = await prometheus.scrapedTarget('wrong-password')
  assert.equal(wrong.health, 'down')
  assert.match(wrong.lastError, /401/)
  const plaintext = await prometheus.scrapedTarget('plaintext')
  assert.equal(plaintext.health, 'down')
  assert.doesNotMatch(plaintext.lastError, /server returned HTTP status/, 'no HTTP answer at all over plain HTTP')
  t.diagnostic(`Prometheus: wrong password → ${wrong.lastError}; plain HTTP → ${plaintext.lastError}`)

  const sender = await udpSocket(t)
  await sendPaced(lb, sender, lines(500))
  const summary = await settled(lb)
  assert.equal(summary.processed, 500)
  const received = await waitFor(async () => {
    const [series] = await prometheus.query('collector_messages_received_total{job="secure",collector="webconf"}')
    return series && series.value === summary.received && series
  }, { what: `Prometheus to store received = ${summary.received}`, timeout: 30000, interval: 250 })
  assert.equal(received.value, 500)
  const [processed] = await prometheus.query('collector_messages_processed_total{job="secure"}')
  assert.equal(processed.value, summary.processed)
  assert.equal((await prometheus.query('collector_messages_received_total{job="wrong-password"}')).length, 0, 'nothing stored from the refused job')
  const [refused] = await prometheus.query('collector_metrics_requests_rejected_total{job="secure",reason="wrongCredentials"}')
  assert.ok(refused.value >= 1, 'the wrong-password scrapes are counted')
  const [tlsRefused] = await prometheus.query('collector_metrics_requests_rejected_total{job="secure",reason="tls"}')
  assert.ok(tlsRefused.value >= 1, 'the plaintext scrapes are counted as failed handshakes')
})

test('every path asks for basic auth (401 with WWW-Authenticate: Basic); the right password is served; a wrong one right after a success, or an unknown user, is still refused; each refusal is counted', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const fx = fixtures(t)
  fx.write(yamlOf(tlsSection(), usersSection({ alice: bcryptHash('correct horse'), bob: bcryptHash('battery staple') })))
  const lb = await startLb(t, { name: 'authtest', instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig })
  const { port } = lb.metricsAddress()
  const ca = fx.ca.cert
  for (const route of ['/metrics', '/healthz', '/readyz', '/nope']) {
    const res = await request(port, route, { ca })
    assert.equal(res.status, 401, route)
    assert.equal(res.headers['www-authenticate'], 'Basic realm="collector authtest", charset="UTF-8"', route)
  }
  assert.equal((await request(port, '/healthz', { ca, auth: 'alice:correct horse' })).status, 200)
  assert.equal((await request(port, '/readyz', { ca, auth: 'alice:correct horse' })).status, 200)
  assert.equal((await request(port, '/nope', { ca, auth: 'alice:correct horse' })).status, 404)
  assert.equal((await request(port, '/metrics', { ca, auth: 'bob:battery staple' })).status, 200)
  // Verified passwords are cached: the cache must not answer for another password or user.
  assert.equal((await request(port, '/metrics', { ca, auth: 'alice:correct horsE' })).status, 401)
  assert.equal((await request(port, '/metrics', { ca, auth: 'alice:' })).status, 401)
  assert.equal((await request(port, '/metrics', { ca, auth: 'bob:correct horse' })).status, 401, 'alice\'s password is not bob\'s')
  assert.equal((await request(port, '/metrics', { ca, auth: 'mallory:correct horse' })).status, 401)
  assert.equal((await request(port, '/metrics', { ca, auth: 'no colon' })).status, 401)
  const metrics = await request(port, '/metrics', { ca, auth: 'alice:correct horse' })
  assert.equal(metrics.status, 200)
  const rejected = (reason) => seriesValue(metrics.body, 'collector_metrics_requests_rejected_total', { reason })
  assert.equal(rejected('noCredentials'), 5, 'four requests without a header, one whose credentials have no colon')
  assert.equal(rejected('wrongCredentials'), 4)
})

test('a flood of wrong passwords is refused (401, or 429 once too many checks are pending), never served, and each refusal is counted', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const fx = fixtures(t)
  fx.write(yamlOf(tlsSection(), usersSection({ alice: bcryptHash('right') })))
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig })
  const { port } = lb.metricsAddress()
  const ca = fx.ca.cert
  const N = 24
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => request(port, '/metrics', { ca, auth: `alice:wrong${i}` })))
  const statuses = answers.map((a) => a.status)
  assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','))
  for (const busy of answers.filter((a) => a.status === 429)) assert.equal(busy.headers['retry-after'], '1')
  const metrics = await request(port, '/metrics', { ca, auth: 'alice:right' })
  assert.equal(metrics.status, 200, 'the right password still works afterwards')
  const count = (reason) => seriesValue(metrics.body, 'collector_metrics_requests_rejected_total', { reason })
  assert.equal(count('wrongCredentials'), statuses.filter((s) => s === 401).length)
  assert.equal(count('authBusy'), statuses.filter((s) => s === 429).length)
  t.diagnostic(`${N} concurrent wrong passwords: ${count('wrongCredentials')} checked (401), ${count('authBusy')} refused unchecked (429)`)
})

test('client certificates: RequireAndVerifyClientCert serves a client whose certificate client_ca_file signed and refuses one with none or another CA\'s at the handshake; restart() to VerifyClientCertIfGiven rebinds the port and lets a client without one in', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const fx = fixtures(t)
  const users = usersSection({ alice: bcryptHash('pw') })
  fx.write(yamlOf(tlsSection('server', ['  client_ca_file: ../ca.pem', '  client_auth_type: RequireAndVerifyClientCert']), users))
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig })
  const { port } = lb.metricsAddress()
  const base = { ca: fx.ca.cert, auth: 'alice:pw' }
  const client = { cert: fx.client.cert, key: fx.client.key }
  const stranger = { cert: fx.strangerClient.cert, key: fx.strangerClient.key }
  assert.equal((await request(port, '/metrics', { ...base, ...client })).status, 200)
  assert.equal((await request(port, '/metrics', { ...client, ca: fx.ca.cert })).status, 401, 'a client certificate does not replace the password')
  await assert.rejects(request(port, '/metrics', base), (err) => /certificate|ECONNRESET|socket hang up/i.test(err.message), 'no client certificate')
  await assert.rejects(request(port, '/metrics', { ...base, ...stranger }), (err) => /certificate|ECONNRESET|socket hang up/i.test(err.message), 'another CA\'s certificate')

  fx.write(yamlOf(tlsSection('server', ['  client_ca_file: ../ca.pem', '  client_auth_type: VerifyClientCertIfGiven']), users))
  await lb.restart()
  assert.deepEqual(lb.metricsAddress().port, port, 'rebound on the same port')
  assert.equal((await request(port, '/metrics', base)).status, 200, 'no certificate is fine now')
  assert.equal((await request(port, '/metrics', { ...base, ...client })).status, 200)
  await assert.rejects(request(port, '/metrics', { ...base, ...stranger }), (err) => /certificate|ECONNRESET|socket hang up/i.test(err.message), 'a certificate given must still verify')
  const metrics = await request(port, '/metrics', base)
  const rejected = (reason) => seriesValue(metrics.body, 'collector_metrics_requests_rejected_total', { reason })
  assert.equal(rejected('tls'), 2, 'refused in the handshake: no certificate, another CA\'s')
  assert.equal(rejected('clientCertificate'), 1, 'refused once the handshake is done: a certificate that does not verify')
})

test('restart() re-reads the web config on the same port: TLS turned on, then a renewed certificate from a new CA and a new password; a broken file leaves the one in use (events.metricsReloadFailed)', { skip: HTPASSWD_SKIP, timeout: 90000 }, async (t) => {
  const fx = fixtures(t)
  const { logger, lines: logged } = captureLogger()
  fx.write(yamlOf(usersSection({ alice: bcryptHash('first') })))
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig, logger })
  const { port } = lb.metricsAddress()
  assert.equal((await request(port, '/healthz', { tls: false })).status, 401, 'basic auth without TLS')
  assert.equal((await request(port, '/healthz', { tls: false, auth: 'alice:first' })).status, 200)

  fx.write(yamlOf(tlsSection(), usersSection({ alice: bcryptHash('first') })))
  await lb.restart()
  assert.equal((await request(port, '/healthz', { ca: fx.ca.cert, auth: 'alice:first' })).status, 200, 'HTTPS on the same port')
  await assert.rejects(request(port, '/healthz', { tls: false, auth: 'alice:first' }), 'plain HTTP is refused now')

  fx.write(yamlOf(tlsSection('new-server'), usersSection({ alice: bcryptHash('second') })))
  await lb.restart()
  assert.equal((await request(port, '/healthz', { ca: fx.otherCa.cert, auth: 'alice:second' })).status, 200, 'the renewed certificate, verified against its CA')
  await assert.rejects(request(port, '/healthz', { ca: fx.ca.cert, auth: 'alice:second' }), /certificate/i, 'the old CA no longer verifies the server')
  assert.equal((await request(port, '/healthz', { ca: fx.otherCa.cert, auth: 'alice:first' })).status, 401, 'the old password is gone')

  fx.write('tls_server_config:\n  cert_file: ../new-server.pem\n  key_file: [broken\n')
  await lb.restart()
  assert.equal(lb.summary().events.metricsReloadFailed, 1)
  assert.ok(logged.some((l) => l.level === 'error' && l.message.startsWith(`metrics web config not reloaded, the one in use stays: metrics web config ${fx.webConfig}: not valid YAML at line `)), JSON.stringify(logged.filter((l) => l.level === 'error')))
  assert.equal((await request(port, '/healthz', { ca: fx.otherCa.cert, auth: 'alice:second' })).status, 200, 'still served as before')
})

test('a web config that cannot be used is WebConfigError (ERR_WEB_CONFIG, an InvalidOptionError) from new LoadBalancer: one line naming the file and what is wrong, never the hash', { skip: HTPASSWD_SKIP }, (t) => {
  const fx = fixtures(t)
  const hash = bcryptHash('pw', 4)
  const users = usersSection({ alice: hash })
  fs.writeFileSync(path.join(fx.dir, 'garbage.pem'), 'not a certificate\n')
  const cases = [
    [null, /cannot read the file \(ENOENT\)/],
    ['tls_server_config:\n  cert_file: "../server.pem\n', /not valid YAML at line \d+, column \d+: /],
    ['- just\n- a list\n', /must be a YAML mapping/],
    [yamlOf(users, 'tls_server_conifg:', '  cert_file: ../server.pem'), /tls_server_conifg is not a known key; did you mean tls_server_config\?/],
    [yamlOf(users, 'http_server_config:', '  http2: true'), /http_server_config is not supported here/],
    [yamlOf(tlsSection(), '  cipher_suites: [TLS_AES_128_GCM_SHA256]'), /tls_server_config\.cipher_suites is not supported here/],
    [yamlOf('tls_server_config:', '  cert_file: ../server.pem'), /tls_server_config\.key_file is missing/],
    [yamlOf('tls_server_config:', '  key_file: ../server.key'), /tls_server_config\.cert_file is missing/],
    [yamlOf('tls_server_config:', '  cert_file: ../nowhere.pem', '  key_file: ../server.key'), /tls_server_config\.cert_file .*nowhere\.pem \(ENOENT\)/],
    [yamlOf('tls_server_config:', '  cert_file: ../garbage.pem', '  key_file: ../server.key'), /tls_server_config\.cert_file is not a PEM certificate/],
    [yamlOf('tls_server_config:', '  cert_file: ../server.pem', '  key_file: ../garbage.pem'), /tls_server_config\.key_file is not an unencrypted PEM private key/],
    [yamlOf('tls_server_config:', '  cert_file: ../server.pem', '  key_file: ../client.key'), /key_file is not the private key of cert_file/],
    [yamlOf(tlsSection('server', ['  client_ca_file: ../ca.pem'])), /client_ca_file is set but client_auth_type is NoClientCert/],
    [yamlOf(tlsSection('server', ['  client_auth_type: RequireClientCert'])), /client_auth_type must be one of NoClientCert, /],
    // Without a CA of its own Node would verify against its public roots.
    [yamlOf(tlsSection('server', ['  client_auth_type: RequireAndVerifyClientCert'])), /tls_server_config\.client_ca_file is missing: client_auth_type RequireAndVerifyClientCert verifies client certificates against it/],
    [yamlOf(tlsSection('server', ['  client_auth_type: VerifyClientCertIfGiven'])), /tls_server_config\.client_ca_file is missing: client_auth_type VerifyClientCertIfGiven verifies/],
    [yamlOf(tlsSection('server', ['  min_version: TLS10'])), /min_version must be TLS12 or TLS13, got "TLS10" \(TLS 1\.0 and 1\.1 are refused/],
    [yamlOf('basic_auth_users:', `  alice: ${hash.slice(0, -1)}`), /basic_auth_users\.alice is not a bcrypt hash/],
    [yamlOf('basic_auth_users:', '  alice: plaintext-password'), /basic_auth_users\.alice is not a bcrypt hash/],
    [yamlOf('basic_auth_users:', '  alice: "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="'), /basic_auth_users\.alice is not a bcrypt hash/],
    [yamlOf('basic_auth_users:', `  "a:b": ${hash}`), /user name "a:b" cannot be used in HTTP basic auth/]
  ]
  for (const [text, expected] of cases) {
    if (text === null) fs.rmSync(fx.webConfig, { force: true })
    else fx.write(text)
    assert.throws(() => new LoadBalancer({ worker: COUNTING, instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig }), (err) => {
      assert.ok(err instanceof WebConfigError && err instanceof InvalidOptionError, err.stack)
      assert.equal(err.code, 'ERR_WEB_CONFIG')
      assert.equal(err.option, 'metricsWebConfig')
      assert.equal(err.file, fx.webConfig)
      assert.ok(err.message.startsWith(`metrics web config ${fx.webConfig}: `), err.message)
      assert.match(err.message, expected)
      assert.doesNotMatch(err.message, /\n/)
      assert.ok(!err.message.includes(hash.slice(7)), 'the hash is not shown')
      return true
    }, String(expected))
  }
  for (const policy of ['RequestClientCert', 'RequireAnyClientCert']) { // these verify nothing, so need no CA
    fx.write(yamlOf(tlsSection('server', [`  client_auth_type: ${policy}`]), users))
    assert.doesNotThrow(() => new LoadBalancer({ worker: COUNTING, instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig }), policy)
  }
  fx.write(yamlOf(tlsSection(), users))
  assert.throws(() => new LoadBalancer({ worker: COUNTING, instances: 1, metricsWebConfig: fx.webConfig }), (err) => err.code === 'ERR_INVALID_OPTION' && /needs metricsPort/.test(err.message))
  const relative = path.relative(process.cwd(), fx.webConfig)
  const lb = new LoadBalancer({ worker: COUNTING, instances: 1, metricsPort: 0, metricsWebConfig: relative })
  assert.equal(lb.options.metricsWebConfig, fx.webConfig, 'a relative path is resolved once, against the working directory')
})

test('the CLI refuses a bad web config before starting anything: exit 2 and one line naming --metrics-web-config and the file', { skip: HTPASSWD_SKIP, timeout: 30000 }, async (t) => {
  const fx = fixtures(t)
  const echo = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
  fx.write(yamlOf('tls_server_config:', '  cert_file: ../server.pem'))
  const bad = await runCli(process.env, 'run', echo, '--port', '0', '--metrics-port', '0', '--metrics-web-config', fx.webConfig)
  assert.equal(bad.code, 2, bad.stderr)
  assert.equal(bad.stderr, `collector: invalid configuration: --metrics-web-config: ${fx.webConfig}: tls_server_config.key_file is missing (the private key of cert_file, PEM)\n`)
  const env = { ...process.env, COLLECTOR_METRICS_WEB_CONFIG: fx.webConfig }
  const noPort = await runCli(env, 'run', echo, '--port', '0')
  assert.equal(noPort.code, 2, noPort.stderr)
  assert.match(noPort.stderr, /--metrics-web-config: needs --metrics-port/)
})

test('bound beyond loopback, the start warns when the endpoint has no TLS or no basic auth; with both it does not', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const fx = fixtures(t)
  const open = captureLogger()
  await startLb(t, { instances: 1, metricsPort: 0, metricsHost: '0.0.0.0', logger: open.logger })
  const warning = open.lines.find((l) => l.level === 'warn' && l.message.startsWith('metrics endpoint on 0.0.0.0 has no TLS and basic auth'))
  assert.ok(warning, JSON.stringify(open.lines))
  fx.write(yamlOf(tlsSection(), usersSection({ alice: bcryptHash('pw', 4) })))
  const secured = captureLogger()
  await startLb(t, { instances: 1, metricsPort: 0, metricsHost: '0.0.0.0', metricsWebConfig: fx.webConfig, logger: secured.logger })
  assert.equal(secured.lines.filter((l) => l.message.startsWith('metrics endpoint on')).length, 0)
})

test('one address\'s wrong guesses cannot lock out another: with 12 wrong passwords in flight from 127.0.0.2, the right one from 127.0.0.1 is served (200, not 429); the guesser gets 401 or 429, each counted', { skip: HTPASSWD_SKIP, timeout: 90000 }, async (t) => {
  const fx = fixtures(t)
  // Cost 12: each check takes long enough that the guesses are still pending when the right password arrives.
  fx.write(yamlOf(tlsSection(), usersSection({ alice: bcryptHash('right', 12) })))
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig })
  const { port } = lb.metricsAddress()
  const ca = fx.ca.cert
  let firstBusy
  const busy = new Promise((resolve) => { firstBusy = resolve })
  const guesses = Array.from({ length: 12 }, (_, i) => request(port, '/metrics', { ca, auth: `alice:wrong${i}`, localAddress: '127.0.0.2' })
    .then((res) => { if (res.status === 429) firstBusy(); return res }))
  // Once a guess is refused unchecked, the guesser's checks fill what it may queue.
  await Promise.race([busy, Promise.all(guesses)])
  const right = await request(port, '/metrics', { ca, auth: 'alice:right' })
  assert.equal(right.status, 200, 'the right password from another address is checked, not refused as busy')
  const statuses = (await Promise.all(guesses)).map((a) => a.status)
  assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','))
  assert.ok(statuses.includes(429), `the guesser is bounded: ${statuses.join(',')}`)
  const metrics = await request(port, '/metrics', { ca, auth: 'alice:right' })
  const count = (reason) => seriesValue(metrics.body, 'collector_metrics_requests_rejected_total', { reason })
  assert.equal(count('wrongCredentials'), statuses.filter((s) => s === 401).length)
  assert.equal(count('authBusy'), statuses.filter((s) => s === 429).length)
  t.diagnostic(`12 concurrent guesses from 127.0.0.2: ${count('wrongCredentials')} checked (401), ${count('authBusy')} refused unchecked (429)`)
})

test('an unknown user name is checked against the costliest hash of the web config (also after new users), so that the time taken does not tell the name is unknown; the decoy\'s password does not let it in', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const hashes = { cheap: bcryptHash('a', 4), dear: bcryptHash('b', 11), middling: bcryptHash('c', 6) }
  const auth = new BasicAuth(new Map(Object.entries(hashes)))
  t.after(() => auth.close())
  const checked = []
  const verify = auth.verifier.verify.bind(auth.verifier)
  auth.verifier.verify = (password, hash) => { checked.push(hash); return verify(password, hash) }
  assert.equal(await auth.check(basic('mallory:b'), HOST), 'wrong')
  assert.deepEqual(checked, [hashes.dear])
  const next = { first: bcryptHash('d', 5), second: bcryptHash('e', 7) }
  auth.setUsers(new Map(Object.entries(next)))
  assert.equal(await auth.check(basic('mallory:e'), HOST), 'wrong')
  assert.deepEqual(checked, [hashes.dear, next.second])
  assert.equal(await auth.check(basic('second:e'), HOST), 'ok')
})

test('restart() that must rebind (TLS off) while another socket took the port: the web config in use is bound again and still served (metricsReloadFailed, ERR_LISTEN named); when even that cannot bind, the endpoint says it is down (address null, an error logged) and the next restart() brings it up', { skip: HTPASSWD_SKIP, timeout: 90000 }, async (t) => {
  const fx = fixtures(t)
  const { logger, lines: logged } = captureLogger()
  const users = usersSection({ alice: bcryptHash('pw', 4) })
  fx.write(yamlOf(tlsSection(), users))
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsWebConfig: fx.webConfig, logger })
  const { port } = lb.metricsAddress()
  const metrics = lb.metrics.server
  const thief = net.createServer()
  t.after(() => new Promise((resolve) => thief.close(() => resolve())))
  // Takes the port the moment the endpoint lets go of it, before it binds again.
  const stealOnClose = () => metrics.server.once('close', () => thief.listen(port, HOST))

  fx.write(yamlOf(users)) // TLS off: a rebind
  stealOnClose()
  const createServer = metrics._createServer
  metrics._createServer = function (tls) { // the thief lets go once the new server failed to bind
    const server = createServer.call(this, tls)
    server.once('error', () => thief.close())
    return server
  }
  t.after(() => { delete metrics._createServer })
  await lb.restart()
  delete metrics._createServer
  assert.equal(lb.summary().events.metricsReloadFailed, 1)
  const failure = logged.find((l) => l.level === 'error' && l.message.startsWith('metrics web config not reloaded, the one in use stays: '))
  assert.ok(failure, JSON.stringify(logged.filter((l) => l.level === 'error')))
  assert.equal(failure.message, `metrics web config not reloaded, the one in use stays: cannot listen on ${HOST}:${port} (http): address already in use (EADDRINUSE)`)
  assert.equal(lb.metricsAddress().port, port)
  assert.equal((await request(port, '/healthz', { ca: fx.ca.cert, auth: 'alice:pw' })).status, 200, 'still HTTPS, as in use before')

  stealOnClose() // and now keeps it
  await lb.restart()
  assert.equal(lb.summary().events.metricsReloadFailed, 2)
  const down = logged.find((l) => l.level === 'error' && l.message.startsWith('metrics endpoint is down: '))
  assert.ok(down, JSON.stringify(logged.filter((l) => l.level === 'error')))
  assert.match(down.message, new RegExp(`^metrics endpoint is down: cannot listen on ${HOST}:${port} \\(http\\): address already in use \\(EADDRINUSE\\), and the web config in use could not be bound again either \\(EADDRINUSE\\)`))
  assert.equal(lb.metricsAddress(), null, 'not bound: no address')
  assert.equal(lb.summary().metrics, null)

  await new Promise((resolve) => thief.close(() => resolve()))
  await lb.restart()
  assert.equal(lb.metricsAddress().port, port, 'up again on the same port')
  assert.equal((await request(port, '/healthz', { tls: false, auth: 'alice:pw' })).status, 200, 'with the new web config: plain HTTP')
  assert.equal(lb.summary().events.metricsReloadFailed, 2)
})

test('bound beyond loopback, a restart() that drops TLS warns as the start does', { skip: HTPASSWD_SKIP, timeout: 60000 }, async (t) => {
  const fx = fixtures(t)
  const users = usersSection({ alice: bcryptHash('pw', 4) })
  fx.write(yamlOf(tlsSection(), users))
  const { logger, lines: logged } = captureLogger()
  const lb = await startLb(t, { instances: 1, metricsPort: 0, metricsHost: '0.0.0.0', metricsWebConfig: fx.webConfig, logger })
  const warnings = () => logged.filter((l) => l.level === 'warn' && l.message.startsWith('metrics endpoint on 0.0.0.0 has no'))
  assert.equal(warnings().length, 0)
  fx.write(yamlOf(users))
  await lb.restart()
  assert.deepEqual(warnings().map((l) => l.message), [`metrics endpoint on 0.0.0.0 has no TLS: anyone who reaches port ${lb.metricsAddress().port} can read it, and passwords cross the network in the clear (see --metrics-web-config, option metricsWebConfig)`])
})
