'use strict'
// The docs a user reads (README.md and docs/*.md) against the package they
// install: every repository path they name exists and is published, every
// relative link and anchor resolves, and the error-code page is the table
// of exceptions/codes.js, which holds exactly the codes the code raises. The option and settings tables are checked in
// option-agreement.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { docFiles } = require('../../app/doc-tables')

const ROOT = path.join(__dirname, '..', '..')
const rel = (file) => path.relative(ROOT, file)

// Named by the docs, part of the repository, not of the published package:
// the tests, the benchmarks and CI (how the figures and guarantees were
// checked), and the lint rules `npm test` applies to the repository.
const REPOSITORY_ONLY = ['test/', 'benchmarks/', '.ci/', 'eslint.config.js/']
const repositoryOnly = (p) => REPOSITORY_ONLY.some((prefix) => `${p}/`.startsWith(prefix))

function packagedFiles () {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))
  return pack.files.map((f) => f.path)
}

const shippedIn = (files, p) => files.some((f) => f === p || f.startsWith(`${p}/`))

/** The repository's top-level folders: a path the docs name starts with one. */
function topFolders () {
  return fs.readdirSync(ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !['node_modules', '.git'].includes(e.name))
    .map((e) => e.name)
}

/** The repository's top-level files, e.g. `index.d.ts`, `eslint.config.js`. */
function topFiles () {
  return fs.readdirSync(ROOT, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name)
}

/**
 * Every repository path a doc names, in prose, backticks or code blocks:
 * `collectors/rtcp/decoder.js`, `node benchmarks/ingest.js`,
 * `./examples/metrics-collector` (a folder's trailing slash dropped), and a
 * top-level file in backticks of its own (`index.d.ts`).
 */
function repositoryPaths (text, folders, files) {
  const escaped = folders.map((f) => f.replace(/[.]/g, '\\.')).join('|')
  const pattern = new RegExp(`(?<![\\w.~/<>$@-])(?:\\./)?((?:${escaped})/[\\w./*@-]*)`, 'g')
  const inFolders = [...text.matchAll(pattern)].map((m) => m[1].replace(/[./]+$/, ''))
  const topLevel = [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]).filter((name) => files.includes(name))
  return [...new Set([...inFolders, ...topLevel])]
}

/** GitHub's anchors of a markdown text's headings (outside code blocks). */
function anchors (text) {
  const seen = new Map()
  const out = new Set()
  let fenced = false
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line)
    if (!m) continue
    const slug = m[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const n = seen.get(slug) || 0
    seen.set(slug, n + 1)
    out.add(n ? `${slug}-${n}` : slug)
  }
  return out
}

/** The relative links of a markdown text: `[text](target)`, not URLs. */
function relativeLinks (text) {
  return [...text.matchAll(/\]\((?![a-z]+:)([^)\s]+)\)/g)].map((m) => m[1])
}

const DOCS = docFiles().map((file) => ({ file, text: fs.readFileSync(file, 'utf8') }))

test('the docs are README.md and the pages under docs/, each page opening with a title and one paragraph saying what it covers', () => {
  assert.ok(DOCS.length > 10, `${DOCS.length} doc files`)
  for (const { file, text } of DOCS.slice(1)) {
    const [title, blank, intro] = text.split('\n')
    assert.match(title, /^# \S/, `${rel(file)}: a title first`)
    assert.equal(blank, '', rel(file))
    assert.match(intro, /^[A-Z`[]/, `${rel(file)}: a paragraph after the title`)
  }
})

test('every repository path the docs name exists and, unless it is repository-only (test/, benchmarks/, .ci/, eslint.config.js), is in the published package', () => {
  const files = packagedFiles()
  const folders = topFolders()
  const tops = topFiles()
  const missing = []
  const unpublished = []
  let named = 0
  for (const { file, text } of DOCS) {
    for (const p of repositoryPaths(text, folders, tops)) {
      named++
      if (p.includes('*')) {
        const re = new RegExp(`^${p.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`)
        if (!files.some((f) => re.test(f))) missing.push(`${rel(file)}: ${p}`)
        continue
      }
      if (!fs.existsSync(path.join(ROOT, p))) missing.push(`${rel(file)}: ${p}`)
      else if (!repositoryOnly(p) && !shippedIn(files, p)) unpublished.push(`${rel(file)}: ${p}`)
    }
  }
  assert.ok(named > 100, `only ${named} paths found: is the pattern still matching?`)
  assert.deepEqual(missing, [], 'named by the docs, not in the repository')
  assert.deepEqual(unpublished, [], 'named by the docs, not in the package (package.json "files")')
})

test('every relative link of the docs resolves: to a published file, and to a heading of the page it names', () => {
  const files = packagedFiles()
  const broken = []
  for (const { file, text } of DOCS) {
    for (const link of relativeLinks(text)) {
      const [target, anchor] = link.split('#')
      const resolved = target ? path.join(path.dirname(file), target) : file
      const p = rel(resolved).replace(/\/$/, '')
      if (!fs.existsSync(resolved)) broken.push(`${rel(file)}: ${link} (no ${p})`)
      else if (!repositoryOnly(p) && !shippedIn(files, p)) broken.push(`${rel(file)}: ${link} (${p} is not published)`)
      else if (anchor && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${rel(file)}: ${link} (no heading #${anchor} in ${p})`)
    }
  }
  assert.deepEqual(broken, [])
})

test('the package ships LICENSE and the examples, and package.json names its repository', () => {
  const files = packagedFiles()
  assert.ok(files.includes('LICENSE'))
  assert.ok(files.includes('examples/metrics-collector/index.js'))
  assert.ok(files.includes('docs/options.md'))
  const pkg = require('../../package.json')
  for (const field of ['repository', 'homepage', 'bugs', 'license']) assert.ok(pkg[field], `package.json has ${field}`)
})

// The codes a user can meet: those of the error classes (exceptions/) and
// those the CLI and launcher give a CollectorError.
function raisedCodes () {
  const codes = new Set()
  const add = (line) => { for (const m of line.matchAll(/'(ERR_[A-Z0-9_]+)'/g)) codes.add(m[1]) }
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.js') ? [path.join(dir, e.name)] : [])
  for (const file of walk(path.join(ROOT, 'exceptions'))) add(fs.readFileSync(file, 'utf8'))
  for (const dir of ['lib', 'workers', 'configs', 'collectors', 'app', 'bin']) {
    for (const file of walk(path.join(ROOT, dir))) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line.includes('CollectorError(')) add(line)
    }
  }
  return codes
}

test('every error code the code raises is declared once in exceptions/codes.js, and each declared one is raised', () => {
  const { ERROR_CODES } = require('../../exceptions/codes')
  const raised = raisedCodes()
  assert.ok(raised.size >= 15, `${raised.size} codes found`)
  assert.deepEqual([...raised].filter((c) => !Object.hasOwn(ERROR_CODES, c)).sort(), [], 'raised, not declared')
  assert.deepEqual(Object.keys(ERROR_CODES).filter((c) => !raised.has(c)).sort(), [], 'declared, never raised')
  for (const [code, { class: name }] of Object.entries(ERROR_CODES)) assert.ok(require('../../exceptions')[name], `${code}: ${name} is an exported error class`)
})

test('docs/errors.md shows the error codes table rendered from exceptions/codes.js (npm run docs)', () => {
  const { errorCodesTable } = require('../../app/doc-tables')
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'errors.md'), 'utf8')
  assert.ok(page.includes(errorCodesTable()), 'docs/errors.md is stale: run npm run docs')
})
