'use strict'

const { formatValue, choicesOf } = require('../lib/shared/value-types')

function flagSyntax (def) {
  const shorts = def.aliases.filter((a) => a.length === 1).map((a) => `-${a}`)
  // the camelCase spelling is accepted too, but help shows the kebab one
  const longs = def.names.filter((n) => n.length > 1 && (n === def.kebab || n !== def.name)).map((n) => `--${n}`)
  const negation = def.type.name === 'boolean' && def.default === true ? [`--no-${def.kebab}`] : []
  return [...shorts, ...longs, ...negation].join(', ') + helpMetavar(def)
}

function helpMetavar (def) {
  if (def.type.name === 'boolean') return ''
  const words = def.keywords ? Object.keys(def.keywords) : []
  return ` <${[def.type.metavar, ...words].join('|')}>`
}

/** A flag's default as help and the docs show it (undefined: none worth showing). */
function shownDefault (def) {
  if (def.secret || def.default === undefined || def.default === false) return undefined
  if (def.keywords && Object.hasOwn(def.keywords, String(def.default))) return String(def.default)
  const text = formatValue(def.type, def.defaultValue)
  return text === '' ? '""' : text
}

function helpDetails (def) {
  const parts = []
  const choices = choicesOf(def)
  if (choices) parts.push(`choices: ${choices.join(', ')}`)
  if (def.min !== undefined) parts.push(`min: ${def.min}`)
  if (def.max !== undefined) parts.push(`max: ${def.max}`)
  const shown = shownDefault(def)
  if (shown !== undefined) parts.push(`default: ${shown}`)
  if (def.env) parts.push(`env: ${def.env}`)
  if (def.required) parts.push('required')
  if (def.secret) parts.push('secret')
  return parts.join('; ')
}

function groupRows (defs) {
  const groups = new Map()
  for (const def of defs) {
    const group = def.group || 'Options'
    if (!groups.has(group)) groups.set(group, [])
    groups.get(group).push({ left: flagSyntax(def), description: def.description || '', details: helpDetails(def) })
  }
  return groups
}

function formatRow (row, width) {
  const pad = ' '.repeat(width + 4)
  // Without a description, the details take its column.
  if (!row.description) return [`  ${row.left.padEnd(width)}  ${row.details}`.trimEnd()]
  const lines = [`  ${row.left.padEnd(width)}  ${row.description}`]
  if (row.details) lines.push(`${pad}${row.details}`)
  return lines
}

/**
 * Usage text listing every flag by group; secret values never shown.
 * @param {string} usage
 * @param {object[]} defs normalized flags (configs/flag-definitions.js)
 * @returns {string}
 */
function helpText (usage, defs) {
  const groups = groupRows(defs)
  const rows = [...groups.values()].flat()
  const width = Math.max(...rows.map((row) => row.left.length))
  const lines = [`Usage: ${usage}`]
  for (const [group, groupRowsList] of groups) {
    lines.push('', `${group}:`, ...groupRowsList.flatMap((row) => formatRow(row, width)))
  }
  lines.push('', 'Long flags also work in camelCase (--retryDelay=5s) and with a single dash (-retry).',
    'Durations: 250ms, 5s, 2m, 1h (a bare number is milliseconds). Lists: comma-separated. Precedence: argv, then env, then default.')
  return lines.join('\n') + '\n'
}

module.exports = { helpText, flagSyntax, shownDefault }
