'use strict'
// The independent E-model (test/oracles/emodel/emodel.py, written from
// ITU-T G.107 without reading ours): R and MOS for a list of inputs.
const { execFileSync } = require('node:child_process')
const path = require('node:path')

const ORACLE = path.join(__dirname, '../oracles/emodel/emodel.py')

/**
 * @param {object[]} inputs G.107 parameters by name (Ppl in percent, delays in ms)
 * @returns {{ R: number, MOS: number }[]}
 */
function oracleRatings (inputs) {
  const out = execFileSync('python3', [ORACLE], { input: inputs.map((i) => JSON.stringify(i)).join('\n') + '\n', encoding: 'utf8' })
  const rows = out.trim().split('\n').map((line) => JSON.parse(line))
  for (const row of rows) if (row.error) throw new Error(`E-model oracle: ${row.error}`)
  return rows
}

module.exports = { oracleRatings }
