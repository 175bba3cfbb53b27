'use strict'

// neostandard (the flat-config successor of standard, ESLint 9): the style
// the code was already written in. `npm run lint`; `npm test` runs it first.
const neostandard = require('neostandard')

// Code that ships and runs in the collector (STYLE: no console, functions
// under 40 lines). bin/ and app/ are the CLI and PM2 layer: they may print.
const RUNTIME = ['index.js', 'lib/**/*.js', 'workers/**/*.js', 'configs/**/*.js', 'collectors/**/*.js', 'exceptions/**/*.js']
const PRODUCTION = [...RUNTIME, 'app/**/*.js', 'bin/**/*.js']

module.exports = [
  {
    ignores: [
      'node_modules/', 'java/', 'native/build/',
      // TypeScript the typings test compiles; mistakes.ts fails on purpose.
      'test/types/'
    ]
  },
  // ts: lints index.d.ts (the hand-written public types) too.
  ...neostandard({ ts: true, noJsx: true }),
  {
    // A disable comment that no longer suppresses anything fails the lint.
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Tables of short fields are packed several to a line on purpose
      // (E-model defaults, flag declarations, RTCP test packets, address
      // cases): one property per line would make them pages long.
      '@stylistic/object-property-newline': 'off',
      // Background loops here poll a flag that stop()/close() sets from
      // another async function (`while (sending) { await … }`); the rule
      // cannot see a change made across an await and flags every one.
      'no-unmodified-loop-condition': 'off',
      // pm2.custom is PM2's constructor for an API bound to one PM2 home.
      'new-cap': ['error', { newIsCap: true, capIsNew: false, properties: true, newIsCapExceptionPattern: '^pm2\\.custom$' }]
    }
  },
  {
    files: RUNTIME,
    rules: {
      // STYLE 4: the runtime logs through the pino-compatible logger option.
      'no-console': 'error'
    }
  },
  {
    files: PRODUCTION,
    rules: {
      // STYLE: no production function over 40 lines (blank lines and
      // comments not counted); an exception says why where it stands.
      'max-lines-per-function': ['error', { max: 40, skipBlankLines: true, skipComments: true }]
    }
  }
]
