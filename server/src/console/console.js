// Shoal console. Every figure comes from the server's own DynamoDB API (POST / with
// X-Amz-Target, as any client sends) or its admin API (/shoal/...). No framework, no build:
// pages are drawn with DOM calls, never from HTML strings, so no value can inject markup.
'use strict';

const PAGE_LIMIT = 25;          // items per page of Scan and Query
const TABLES_PAGE = 50;         // tables per page of ListTables
const STREAM_KEPT = 200;        // stream records the tail keeps on screen
const STREAM_CALLS_PER_TICK = 8; // GetRecords calls per shard per poll
const POLL_MS = 1500;
const RATE_SAMPLES = 40;        // capacity samples kept for each sparkline

// ---- DOM helpers ---------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

function table(headers, rows, caption) {
  return h('div', { class: 'scroll' },
    h('table', {},
      caption ? h('caption', { class: 'muted', text: caption }) : null,
      h('thead', {}, h('tr', {}, headers.map((t) =>
        h('th', { scope: 'col', class: t.endsWith('#') ? 'num' : null, text: t.replace(/#$/, '') })))),
      h('tbody', {}, rows)));
}

function num(value) {
  return h('td', { class: 'num' }, value);
}

// Numbers as en-US writes them (1,234,567.89), formatted by hand: the first Intl object a
// page creates loads the browser's locale data, which measured 15–100 ms of a fresh load on
// a 2-core machine, more than the rest of the script's start.
function formatted(value, fractionMax) {
  const n = Number(value);
  if (!Number.isFinite(n) || Math.abs(n) >= 1e21) return String(n);
  const [whole, fraction] = Math.abs(n).toFixed(fractionMax).split('.');
  const digits = (fraction || '').replace(/0+$/, '');
  const sign = n < 0 && (Number(whole) > 0 || digits) ? '-' : '';
  return sign + whole.replace(/\B(?=(\d{3})+$)/g, ',') + (digits ? '.' + digits : '');
}
const integer = { format: (n) => formatted(n, 3) };   // Intl's default: at most 3 decimals
const decimal = { format: (n) => formatted(n, 2) };

function bytes(n) {
  if (n === undefined || n === null) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = Number(n);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return (unit === 0 ? integer.format(value) : decimal.format(value)) + ' ' + units[unit];
}

function pre(value) {
  return h('pre', {}, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

function errorBox(error) {
  return h('p', { class: 'error', role: 'alert', text: String(error && error.message || error) });
}

function status(text) {
  document.getElementById('status').textContent = text;
}

// ---- Calls ---------------------------------------------------------------------------

class ApiError extends Error {
  constructor(type, message) {
    super(type + (message ? ': ' + message : ''));
    this.type = type;
  }
}

function amzDate() {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
}

// DynamoDB Local's rule, which the server follows by default: a well-formed SigV4 header is
// enough. The console holds no secret, so it sends one with a dummy signature; a server
// started with --auth (verification) refuses it.
function authorization(date) {
  return 'AWS4-HMAC-SHA256 Credential=console/' + date.slice(0, 8) +
    '/ddblocal/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0';
}

async function call(operation, body, service) {
  const date = amzDate();
  const target = (service || 'DynamoDB_20120810') + '.' + operation;
  const response = await fetch('/', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.0',
      'X-Amz-Target': target,
      'X-Amz-Date': date,
      'Authorization': authorization(date),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let answer = {};
  try { answer = text ? JSON.parse(text) : {}; } catch (_) { answer = { message: text }; }
  if (!response.ok) {
    const type = String(answer.__type || response.status).split('#').pop();
    throw new ApiError(type, answer.message || answer.Message || '');
  }
  return answer;
}

const streams = (operation, body) => call(operation, body, 'DynamoDBStreams_20120810');

async function admin(method, path, body) {
  const response = await fetch('/shoal/' + path, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  });
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try { message = JSON.parse(text).error || text; } catch (_) { /* plain text */ }
    const error = new Error(response.status + ': ' + message);
    error.status = response.status;
    throw error;
  }
  return text;
}

const adminJson = async (method, path, body) => JSON.parse(await admin(method, path, body));

// ---- DynamoDB JSON -------------------------------------------------------------------

// A DynamoDB value as plain JSON (numbers kept exact: as JSON numbers only when a double
// holds them exactly, else as strings).
function plainValue(value) {
  const [type, inner] = Object.entries(value)[0] || [];
  switch (type) {
    case 'S': case 'B': return inner;
    case 'N': {
      const number = Number(inner);
      return String(number) === inner ? number : inner;
    }
    case 'BOOL': return inner;
    case 'NULL': return null;
    case 'SS': case 'BS': return inner;
    case 'NS': return inner.map((n) => (String(Number(n)) === n ? Number(n) : n));
    case 'L': return inner.map(plainValue);
    case 'M': return plainItem(inner);
    default: return value;
  }
}

function plainItem(item) {
  const out = {};
  for (const [name, value] of Object.entries(item || {})) out[name] = plainValue(value);
  return out;
}

function shortValue(value) {
  if (value === undefined) return '';
  const plain = plainValue(value);
  return typeof plain === 'string' ? plain : JSON.stringify(plain);
}

// A typed key value from text, for an attribute of type S, N or B.
function typed(type, text) {
  return { [type]: text };
}

// ---- Router --------------------------------------------------------------------------

let leave = [];   // what the current page stops (timers) when another is drawn
let drawn = 0;    // the draw a page belongs to, so late answers of an old page are dropped

function onLeave(stop) { leave.push(stop); }

function parseHash() {
  const hash = location.hash.replace(/^#\/?/, '') || 'tables';
  const [path, query] = hash.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query || '') };
}

function link(parts, params) {
  const query = params ? '?' + new URLSearchParams(params).toString() : '';
  return '#/' + parts.map(encodeURIComponent).join('/') + query;
}

async function route() {
  for (const stop of leave) stop();
  leave = [];
  drawn += 1;
  const draw = drawn;
  const { parts, params } = parseHash();
  const main = document.getElementById('main');
  const section = parts[0];
  for (const a of document.querySelectorAll('nav a')) {
    const current = a.dataset.nav === section ||
      (a.dataset.nav === 'tables' && ['table', 'items', 'item', 'stream'].includes(section));
    if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const pages = {
    tables: () => tablesPage(params),
    table: () => tablePage(parts[1]),
    items: () => itemsPage(parts[1], params),
    item: () => itemPage(parts[1], params),
    stream: () => streamPage(parts[1], params),
    capacity: () => capacityPage(),
    knobs: () => knobsPage(),
    report: () => reportPage(),
  };
  const page = pages[section] || (() => [h('h1', { text: 'No such page' })]);
  const started = performance.now();
  let content;
  try {
    content = await page();
  } catch (error) {
    content = [h('h1', { text: 'Error' }), errorBox(error)];
  }
  if (draw !== drawn) return;
  main.replaceChildren(...[content].flat());
  main.dataset.page = section;
  const heading = main.querySelector('h1');
  if (heading) document.title = heading.textContent + ' · Shoal console';
  main.focus({ preventScroll: true });
  // When the page was drawn, in ms since the document started loading: what the page-load
  // figure reads.
  main.dataset.drawnAt = String(Math.round(performance.now()));
  main.dataset.drawMs = String(Math.round(performance.now() - started));
  status('drawn in ' + Math.round(performance.now() - started) + ' ms');
}

function isCurrent(draw) { return draw === drawn; }

// ---- Tables --------------------------------------------------------------------------

async function describe(name) {
  return (await call('DescribeTable', { TableName: name })).Table;
}

// The page of tables the tables page listed last (localStorage, one entry): the next load of
// that page describes those tables while it lists them again, so it takes one round of
// calls, not two. Only the tables listed now are drawn; one listed now but not guessed is
// described then, and a guess no longer listed is dropped.
const LISTED_KEY = 'shoal-console-listed';

function listedBefore(start) {
  try {
    const kept = JSON.parse(localStorage.getItem(LISTED_KEY) || 'null');
    if (!kept || kept.start !== (start || '') || !Array.isArray(kept.names)) return [];
    return kept.names.filter((name) => typeof name === 'string').slice(0, TABLES_PAGE);
  } catch (_) {
    return [];   // storage off or unreadable: the page lists first, then describes
  }
}

function rememberListed(start, names) {
  try {
    localStorage.setItem(LISTED_KEY, JSON.stringify({ start: start || '', names }));
  } catch (_) { /* storage off or full: the next load lists first */ }
}

async function describeForList(name) {
  try {
    const [description, ttl] = await Promise.all([
      describe(name),
      call('DescribeTimeToLive', { TableName: name }).catch(() => ({})),
    ]);
    return { name, description, ttl: ttl.TimeToLiveDescription || {} };
  } catch (error) {
    return { name, error };
  }
}

async function tablesPage(params) {
  const start = params.get('start') || undefined;
  const ahead = new Map(listedBefore(start).map((name) => [name, describeForList(name)]));
  const listed = await call('ListTables', { Limit: TABLES_PAGE, ExclusiveStartTableName: start });
  const names = listed.TableNames || [];
  rememberListed(start, names);
  const described = await Promise.all(names.map((name) => ahead.get(name) || describeForList(name)));
  const rows = described.map(({ name, description, ttl, error }) => {
    if (error) return h('tr', {}, h('td', {}, name), h('td', { colspan: 6, class: 'error', text: error.message }));
    const stream = description.StreamSpecification && description.StreamSpecification.StreamEnabled
      ? description.StreamSpecification.StreamViewType : 'off';
    const billing = (description.BillingModeSummary || {}).BillingMode || 'PROVISIONED';
    const throughput = description.ProvisionedThroughput || {};
    return h('tr', { 'data-table': name },
      h('td', {}, h('a', { href: link(['table', name]), text: name })),
      h('td', {}, description.TableStatus),
      num(integer.format(description.ItemCount || 0)),
      num(bytes(description.TableSizeBytes)),
      h('td', {}, billing === 'PAY_PER_REQUEST' ? 'on demand'
        : 'provisioned ' + throughput.ReadCapacityUnits + ' RCU / ' + throughput.WriteCapacityUnits + ' WCU'),
      h('td', {}, stream),
      h('td', {}, ttl.TimeToLiveStatus === 'ENABLED' ? 'on: ' + ttl.AttributeName
        : (ttl.TimeToLiveStatus || 'DISABLED').toLowerCase()));
  });
  const next = listed.LastEvaluatedTableName;
  return [
    h('h1', { text: 'Tables' }),
    names.length === 0 && !start ? h('p', { class: 'muted', text: 'No tables yet: create one with any DynamoDB client.' }) : null,
    table(['Table', 'Status', 'Items#', 'Size#', 'Billing', 'Stream', 'Time to Live'], rows),
    h('div', { class: 'row' },
      start ? h('a', { href: '#/tables', text: '« First page' }) : null,
      next ? h('a', { href: link(['tables'], { start: next }), text: 'Next page »' }) : null),
    h('p', { class: 'muted', text: 'Item counts and sizes are DescribeTable\'s, kept with every write.' }),
  ];
}

function keySchemaText(schema, definitions) {
  const types = Object.fromEntries((definitions || []).map((d) => [d.AttributeName, d.AttributeType]));
  return (schema || []).map((k) => k.AttributeName + ' (' + (k.KeyType === 'HASH' ? 'partition' : 'sort') +
    ', ' + (types[k.AttributeName] || '?') + ')').join(', ');
}

function projectionText(projection) {
  if (!projection) return '';
  const extra = projection.NonKeyAttributes ? ': ' + projection.NonKeyAttributes.join(', ') : '';
  return projection.ProjectionType + extra;
}

async function tablePage(name) {
  const [t, ttl] = await Promise.all([
    describe(name),
    call('DescribeTimeToLive', { TableName: name }).catch(() => ({})),
  ]);
  const definitions = t.AttributeDefinitions;
  const indexRows = [];
  for (const [kind, list] of [['local', t.LocalSecondaryIndexes], ['global', t.GlobalSecondaryIndexes]]) {
    for (const index of list || []) {
      let state = index.IndexStatus || 'ACTIVE';
      let progress = null;
      if (index.Backfilling || state === 'CREATING') {
        const share = t.ItemCount ? Math.min(1, (index.ItemCount || 0) / t.ItemCount) : 0;
        progress = h('span', {},
          ' backfilling: ', integer.format(index.ItemCount || 0), ' entries for ',
          integer.format(t.ItemCount || 0), ' items ',
          h('span', { class: 'meter', role: 'img', 'aria-label': Math.round(share * 100) + '%' },
            h('span', { class: 'bar', style: 'width:' + (share * 100).toFixed(1) + '%' })));
      }
      indexRows.push(h('tr', { 'data-index': index.IndexName },
        h('td', {}, h('a', { href: link(['items', name], { index: index.IndexName }), text: index.IndexName })),
        h('td', {}, kind),
        h('td', {}, keySchemaText(index.KeySchema, definitions)),
        h('td', {}, projectionText(index.Projection)),
        h('td', {}, state, progress),
        num(integer.format(index.ItemCount || 0)),
        num(bytes(index.IndexSizeBytes))));
    }
  }
  const stream = t.StreamSpecification && t.StreamSpecification.StreamEnabled;
  const ttlDescription = ttl.TimeToLiveDescription || {};
  const billing = (t.BillingModeSummary || {}).BillingMode || 'PROVISIONED';
  const facts = [
    ['Status', t.TableStatus],
    ['Key', keySchemaText(t.KeySchema, definitions)],
    ['Items', integer.format(t.ItemCount || 0)],
    ['Size', bytes(t.TableSizeBytes)],
    ['Billing', billing === 'PAY_PER_REQUEST' ? 'on demand' : 'provisioned ' +
      t.ProvisionedThroughput.ReadCapacityUnits + ' RCU / ' + t.ProvisionedThroughput.WriteCapacityUnits + ' WCU'],
    ['Stream', stream ? t.StreamSpecification.StreamViewType : 'off'],
    ['Time to Live', ttlDescription.TimeToLiveStatus === 'ENABLED' ? 'on: ' + ttlDescription.AttributeName : 'off'],
    ['Deletion protection', t.DeletionProtectionEnabled ? 'on' : 'off'],
    ['Table class', (t.TableClassSummary || {}).TableClass || 'STANDARD'],
  ];
  const page = [
    h('p', { class: 'crumbs' }, h('a', { href: '#/tables', text: 'Tables' }), ' / '),
    h('h1', { text: name }),
    h('div', { class: 'row' },
      h('a', { href: link(['items', name]), text: 'Browse items' }),
      stream ? h('a', { href: link(['stream', name]), text: 'Tail the stream' }) : null,
      h('a', { href: link(['item', name], { new: '1' }), text: 'New item' })),
    table(['', ''], facts.map(([k, v]) => h('tr', {}, h('th', { scope: 'row', text: k }), h('td', { text: v })))),
    h('h2', { text: 'Indexes' }),
    indexRows.length ? table(['Index', 'Kind', 'Key', 'Projection', 'Status', 'Entries#', 'Size#'], indexRows)
      : h('p', { class: 'muted', text: 'No secondary indexes.' }),
  ];
  if ((t.LocalSecondaryIndexes || []).length) page.push(collectionsPanel(name, t));
  return page;
}

// An item collection's size against the 10 GB cap, looked up by partition key through
// the API: a write that returns ItemCollectionMetrics would, but a read does not, so the
// console asks the admin API, which reads the collection's size record.
function collectionsPanel(name, t) {
  const hash = t.KeySchema.find((k) => k.KeyType === 'HASH').AttributeName;
  const out = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'grid', onsubmit: async (event) => {
    event.preventDefault();
    out.replaceChildren(h('p', { class: 'muted', text: 'Reading…' }));
    try {
      const found = await adminJson('GET', 'collections?' + new URLSearchParams({ table: name, limit: '20' }));
      out.replaceChildren(collectionsTable(found));
    } catch (error) {
      out.replaceChildren(errorBox(error));
    }
  } }, h('button', { type: 'submit', text: 'Largest item collections' }));
  return h('section', {}, h('h2', { text: 'Item collections' }),
    h('p', { class: 'muted', text: 'A table with a local secondary index caps each partition key\'s items and entries at 10 GB. Key: ' + hash + '.' }),
    form, out);
}

function collectionsTable(found) {
  const cap = found.limit_bytes || 10 * 2 ** 30;
  const rows = (found.collections || []).map((c) => h('tr', {},
    h('td', { class: 'cell', text: shortValue(c.key) }),
    num(integer.format(c.item_count)),
    num(bytes(c.size_bytes)),
    h('td', {}, h('span', { class: 'meter' }, h('span', { class: 'bar', style: 'width:' + Math.min(100, c.size_bytes / cap * 100).toFixed(2) + '%' })),
      ' ' + (c.size_bytes / cap * 100).toFixed(4) + '%')));
  return h('div', {},
    table(['Partition key', 'Items#', 'Size#', 'Of the cap'], rows),
    h('p', { class: 'muted', text: 'Looked at ' + integer.format(found.scanned || 0) + ' collections' +
      (found.complete ? ' (all of them).' : ' (the walk stops at its bound).') }));
}

// ---- Items ---------------------------------------------------------------------------

// The key attributes of the table or of one of its indexes.
function keysOf(t, indexName) {
  const index = [...(t.LocalSecondaryIndexes || []), ...(t.GlobalSecondaryIndexes || [])]
    .find((i) => i.IndexName === indexName);
  const schema = index ? index.KeySchema : t.KeySchema;
  const types = Object.fromEntries(t.AttributeDefinitions.map((d) => [d.AttributeName, d.AttributeType]));
  const hash = schema.find((k) => k.KeyType === 'HASH');
  const range = schema.find((k) => k.KeyType === 'RANGE');
  return {
    hash: hash.AttributeName, hashType: types[hash.AttributeName],
    range: range ? range.AttributeName : null, rangeType: range ? types[range.AttributeName] : null,
  };
}

function tableKey(t, item) {
  const key = {};
  for (const k of t.KeySchema) key[k.AttributeName] = item[k.AttributeName];
  return key;
}

const SORT_OPERATORS = ['=', '<', '<=', '>', '>=', 'begins_with', 'between'];
const FILTER_OPERATORS = ['=', '<>', '<', '<=', '>', '>=', 'begins_with', 'contains',
  'attribute_exists', 'attribute_not_exists'];

// What a fresh items form holds (its fields are drawn with these values): the page's first
// request is built from it before the table's description arrives, so both go at once.
function freshForm(params) {
  return {
    mode: params.get('mode') || 'Scan', index: params.get('index') || '', pk: '', skop: '=', sk: '', sk2: '',
    fname: '', fop: '=', fvalue: '', ftype: 'S', projection: '', limit: String(PAGE_LIMIT),
    consistent: false, descending: false,
  };
}

// A reader of the form's fields: a checkbox reads as whether it is checked.
function formFields(form) {
  return (name) => {
    const field = form.elements[name];
    return field.type === 'checkbox' ? field.checked : field.value;
  };
}

// The Query or Scan request the fields describe (`field(name)` reads one). A Scan that asks
// no consistent read needs nothing of the table's description (`t` may then be null).
function buildRequest(name, t, field) {
  const request = { TableName: name, Limit: Math.max(1, Math.min(1000, Number(field('limit')) || PAGE_LIMIT)) };
  const index = field('index');
  if (index) request.IndexName = index;
  const names = {};
  const values = {};
  if (field('mode') === 'Query') {
    const keys = keysOf(t, index || null);
    names['#pk'] = keys.hash;
    values[':pk'] = typed(keys.hashType, field('pk'));
    let condition = '#pk = :pk';
    const op = field('skop');
    if (keys.range && field('sk') !== '') {
      names['#sk'] = keys.range;
      values[':sk'] = typed(keys.rangeType, field('sk'));
      if (op === 'begins_with') condition += ' AND begins_with(#sk, :sk)';
      else if (op === 'between') {
        values[':sk2'] = typed(keys.rangeType, field('sk2'));
        condition += ' AND #sk BETWEEN :sk AND :sk2';
      } else condition += ' AND #sk ' + op + ' :sk';
    }
    request.KeyConditionExpression = condition;
    if (field('descending')) request.ScanIndexForward = false;
  }
  const filterName = field('fname').trim();
  if (filterName) {
    const op = field('fop');
    names['#f'] = filterName;
    if (op === 'attribute_exists' || op === 'attribute_not_exists') {
      request.FilterExpression = op + '(#f)';
    } else {
      values[':f'] = typed(field('ftype'), field('fvalue'));
      if (field('ftype') === 'BOOL') values[':f'] = { BOOL: field('fvalue') === 'true' };
      request.FilterExpression = (op === 'begins_with' || op === 'contains')
        ? op + '(#f, :f)' : '#f ' + op + ' :f';
    }
  }
  const projection = field('projection').split(',').map((p) => p.trim()).filter(Boolean);
  if (projection.length) {
    request.ProjectionExpression = projection.map((p, i) => { names['#p' + i] = p; return '#p' + i; }).join(', ');
  }
  if (field('consistent') && !(index && !(t.LocalSecondaryIndexes || []).some((i) => i.IndexName === index))) {
    request.ConsistentRead = true;
  }
  if (Object.keys(names).length) request.ExpressionAttributeNames = names;
  if (Object.keys(values).length) request.ExpressionAttributeValues = values;
  request.ReturnConsumedCapacity = 'INDEXES';
  return request;
}

function field(label, input) {
  return h('label', {}, label, input);
}

function select(name, options, chosen) {
  return h('select', { name }, options.map((o) => {
    const [value, text] = Array.isArray(o) ? o : [o, o];
    return h('option', { value, selected: value === chosen, text });
  }));
}

async function itemsPage(name, params) {
  const fresh = freshForm(params);
  // The page comes with its first page of items: a Scan of PAGE_LIMIT items, never the
  // whole table. It is sent with DescribeTable, not after it (a Query waits for the key
  // names the description gives).
  const send = async (operation, request) => {
    const started = performance.now();
    try {
      const answer = await call(operation, request);
      return { operation, request, answer, elapsed: Math.round(performance.now() - started) };
    } catch (error) {
      return { operation, request, error };
    }
  };
  const first = fresh.mode === 'Scan' ? send('Scan', buildRequest(name, null, (field) => fresh[field])) : null;
  const t = await describe(name);
  const indexes = [...(t.LocalSecondaryIndexes || []), ...(t.GlobalSecondaryIndexes || [])].map((i) => i.IndexName);
  const index = fresh.index;
  const keys = keysOf(t, index || null);
  const results = h('div', { id: 'results', 'aria-live': 'polite' });
  const form = h('form', { class: 'grid', id: 'query-form' },
    field('Operation', select('mode', ['Scan', 'Query'], fresh.mode)),
    field('Table or index', select('index', [['', name + ' (table)'], ...indexes.map((i) => [i, i])], index)),
    field('Partition key ' + keys.hash + ' (' + keys.hashType + ')', h('input', { name: 'pk' })),
    keys.range ? field('Sort key ' + keys.range + ' (' + keys.rangeType + ')', select('skop', SORT_OPERATORS, fresh.skop)) : h('input', { type: 'hidden', name: 'skop', value: fresh.skop }),
    keys.range ? field('Sort key value', h('input', { name: 'sk' })) : h('input', { type: 'hidden', name: 'sk', value: '' }),
    keys.range ? field('…and (between)', h('input', { name: 'sk2' })) : h('input', { type: 'hidden', name: 'sk2', value: '' }),
    field('Filter attribute', h('input', { name: 'fname' })),
    field('Filter', select('fop', FILTER_OPERATORS, fresh.fop)),
    field('Filter value', h('input', { name: 'fvalue' })),
    field('Value type', select('ftype', ['S', 'N', 'BOOL'], fresh.ftype)),
    field('Projection (names, commas)', h('input', { name: 'projection' })),
    field('Page size', h('input', { name: 'limit', type: 'number', min: 1, max: 1000, value: fresh.limit })),
    h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'consistent' }), 'Strongly consistent'),
    h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'descending' }), 'Descending (Query)'),
    h('button', { type: 'submit', id: 'run', text: 'Run' }));
  // Changing the index redraws the form with that index's key names.
  form.elements.index.addEventListener('change', () => {
    location.hash = link(['items', name], { index: form.elements.index.value, mode: form.elements.mode.value });
  });
  const pages = [];   // ExclusiveStartKey of each page shown so far
  const draw = drawn;
  const show = ({ operation, request, answer, error, elapsed }) => {
    if (!isCurrent(draw)) return;
    if (error) {
      results.replaceChildren(h('h2', { text: 'Request' }), pre({ [operation]: request }), errorBox(error));
      return;
    }
    const items = answer.Items || [];
    const columns = [];
    for (const k of [keys.hash, keys.range, ...t.KeySchema.map((k) => k.AttributeName)]) {
      if (k && !columns.includes(k)) columns.push(k);
    }
    for (const item of items) for (const a of Object.keys(item)) if (!columns.includes(a)) columns.push(a);
    const shown = columns.slice(0, 12);
    const rows = items.map((item) => h('tr', {},
      h('td', {}, h('a', { href: link(['item', name], { key: JSON.stringify(tableKey(t, item)) }), text: 'open' })),
      shown.map((c) => h('td', { class: 'cell', title: shortValue(item[c]), text: shortValue(item[c]) }))));
    const capacity = answer.ConsumedCapacity || {};
    const pageNumber = pages.length;
    results.replaceChildren(
      h('h2', { text: operation + ' page ' + (pageNumber + 1) }),
      h('p', { id: 'summary' },
        integer.format(answer.Count || 0) + ' items returned, ' + integer.format(answer.ScannedCount || 0) +
        ' read; ' + decimal.format(capacity.CapacityUnits || 0) + ' read capacity units; ' + elapsed + ' ms'),
      items.length ? table(['', ...shown], rows) : h('p', { class: 'muted', text: 'No items on this page.' }),
      h('div', { class: 'row' },
        pageNumber > 0 ? h('button', { type: 'button', class: 'plain', text: '« Previous page', onclick: () => {
          pages.pop();
          run(pages[pages.length - 1]);
        } }) : null,
        answer.LastEvaluatedKey ? h('button', { type: 'button', class: 'plain', id: 'next-page', text: 'Next page »', onclick: () => {
          pages.push(answer.LastEvaluatedKey);
          run(answer.LastEvaluatedKey);
        } }) : null),
      h('div', { class: 'cols' },
        h('div', {}, h('h2', { text: 'Request sent' }), h('pre', { id: 'request-sent' }, JSON.stringify({ [operation]: request }, null, 2))),
        h('div', {}, h('h2', { text: 'Capacity consumed' }), h('pre', { id: 'capacity-consumed' }, JSON.stringify(capacity, null, 2)))));
  };
  const run = async (startKey) => {
    let request;
    try {
      request = buildRequest(name, t, formFields(form));
    } catch (error) {
      results.replaceChildren(errorBox(error));
      return;
    }
    if (startKey) request.ExclusiveStartKey = startKey;
    results.replaceChildren(h('p', { class: 'muted', text: 'Running…' }));
    show(await send(form.elements.mode.value, request));
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    pages.length = 0;
    run(undefined);
  });
  if (first) show(await first); else await run(undefined);
  return [
    h('p', { class: 'crumbs' }, h('a', { href: '#/tables', text: 'Tables' }), ' / ',
      h('a', { href: link(['table', name]), text: name }), ' /'),
    h('h1', { text: 'Items of ' + name + (index ? ' · ' + index : '') }),
    h('div', { class: 'row' }, h('a', { href: link(['item', name], { new: '1' }), text: 'New item' })),
    form, results,
  ];
}

// The condition that the item is still the one loaded: its `version` number if it has
// one, else every attribute as loaded.
function unchangedCondition(loaded) {
  const names = {};
  const values = {};
  const version = loaded.version && loaded.version.N !== undefined;
  const parts = [];
  const attributes = version ? ['version'] : Object.keys(loaded);
  attributes.forEach((attribute, i) => {
    names['#c' + i] = attribute;
    values[':c' + i] = loaded[attribute];
    parts.push('#c' + i + ' = :c' + i);
  });
  return { ConditionExpression: parts.join(' AND '), ExpressionAttributeNames: names, ExpressionAttributeValues: values, byVersion: version };
}

async function itemPage(name, params) {
  const creating = params.get('new') === '1';
  const out = h('div', { 'aria-live': 'polite', id: 'item-result' });
  let key;
  if (!creating) {
    try { key = JSON.parse(params.get('key') || ''); } catch (_) { throw new Error('the link names no item key'); }
  }
  // The item is read with the table's description, not after it: the key is in the link.
  const [t, answer] = await Promise.all([
    describe(name),
    creating ? null : call('GetItem', { TableName: name, Key: key, ConsistentRead: true }),
  ]);
  if (answer && !answer.Item) {
    return [h('h1', { text: 'No such item' }), pre(key), h('a', { href: link(['items', name]), text: 'Back to the items' })];
  }
  const loaded = answer ? answer.Item : null;
  const template = loaded || Object.fromEntries(t.KeySchema.map((k) => {
    const type = t.AttributeDefinitions.find((d) => d.AttributeName === k.AttributeName).AttributeType;
    return [k.AttributeName, { [type]: type === 'N' ? '0' : '' }];
  }));
  const editor = h('textarea', { id: 'item-editor', name: 'item', spellcheck: 'false', 'aria-label': 'Item as DynamoDB JSON' },
    JSON.stringify(template, null, 2));
  const save = async () => {
    let item;
    try { item = JSON.parse(editor.value); } catch (error) { out.replaceChildren(errorBox('not JSON: ' + error.message)); return; }
    const request = { TableName: name, Item: item, ReturnConsumedCapacity: 'TOTAL' };
    if (creating) {
      request.ConditionExpression = 'attribute_not_exists(#k)';
      request.ExpressionAttributeNames = { '#k': t.KeySchema[0].AttributeName };
    } else {
      const condition = unchangedCondition(loaded);
      if (condition.byVersion && item.version && item.version.N === loaded.version.N) {
        item.version = { N: String(BigInt(loaded.version.N) + 1n) };
      }
      delete condition.byVersion;
      Object.assign(request, condition);
    }
    try {
      const answer = await call('PutItem', request);
      out.replaceChildren(h('p', { class: 'ok', id: 'saved', text: 'Saved: ' + decimal.format((answer.ConsumedCapacity || {}).CapacityUnits || 0) + ' write units.' }),
        h('h2', { text: 'Request sent' }), pre({ PutItem: request }),
        h('a', { href: link(['item', name], { key: JSON.stringify(tableKey(t, item)) }), text: 'Reload the item' }));
    } catch (error) {
      const changed = error.type === 'ConditionalCheckFailedException';
      out.replaceChildren(errorBox(changed ? (creating ? 'An item with this key exists already.'
        : 'The item changed since it was loaded: reload it before saving.') : error),
      h('h2', { text: 'Request sent' }), pre({ PutItem: request }));
    }
  };
  const remove = async () => {
    const condition = unchangedCondition(loaded);
    delete condition.byVersion;
    const request = { TableName: name, Key: tableKey(t, loaded), ...condition };
    try {
      await call('DeleteItem', request);
      out.replaceChildren(h('p', { class: 'ok', id: 'deleted', text: 'Deleted.' }), pre({ DeleteItem: request }));
    } catch (error) {
      out.replaceChildren(errorBox(error.type === 'ConditionalCheckFailedException'
        ? 'The item changed since it was loaded: not deleted.' : error));
    }
  };
  const confirmDelete = h('span', { hidden: true },
    'Delete this item? ', h('button', { type: 'button', class: 'danger', id: 'delete-confirm', text: 'Delete', onclick: remove }),
    ' ', h('button', { type: 'button', class: 'plain', text: 'Keep it', onclick: () => { confirmDelete.hidden = true; } }));
  return [
    h('p', { class: 'crumbs' }, h('a', { href: '#/tables', text: 'Tables' }), ' / ',
      h('a', { href: link(['table', name]), text: name }), ' / ', h('a', { href: link(['items', name]), text: 'items' }), ' /'),
    h('h1', { text: creating ? 'New item in ' + name : 'Item of ' + name }),
    loaded ? h('div', { class: 'cols' },
      h('div', {}, h('h2', { text: 'DynamoDB JSON' }), h('pre', { id: 'item-dynamodb-json' }, JSON.stringify(loaded, null, 2))),
      h('div', {}, h('h2', { text: 'Plain JSON' }), h('pre', { id: 'item-plain-json' }, JSON.stringify(plainItem(loaded), null, 2)))) : null,
    h('h2', { text: creating ? 'Item (DynamoDB JSON)' : 'Edit (DynamoDB JSON)' }),
    loaded ? h('p', { class: 'muted', text: loaded.version && loaded.version.N !== undefined
      ? 'Saved on condition that version is still ' + loaded.version.N + ' (and the version goes up by one).'
      : 'Saved on condition that every attribute is still as loaded.' }) : null,
    editor,
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'save', text: creating ? 'Create' : 'Save', onclick: save }),
      loaded ? h('button', { type: 'button', class: 'plain', id: 'delete', text: 'Delete…', onclick: () => {
        confirmDelete.hidden = false;
        confirmDelete.querySelector('button').focus();
      } }) : null,
      confirmDelete),
    out,
  ];
}

// ---- Stream tail ---------------------------------------------------------------------

async function streamPage(name, params) {
  const t = await describe(name);
  if (!t.LatestStreamArn || !(t.StreamSpecification || {}).StreamEnabled) {
    return [h('h1', { text: 'Stream of ' + name }), h('p', { text: 'This table has no stream enabled.' })];
  }
  const arn = t.LatestStreamArn;
  const fromLatest = params.get('from') === 'latest';
  const shardsOut = h('div', {});
  const recordsBody = h('tbody', { id: 'stream-records' });
  const counter = h('p', { class: 'muted', id: 'stream-count', text: 'Waiting for records…' });
  const iterators = new Map();   // shard id → next iterator, null when the shard is done
  const kept = [];
  let total = 0;
  let tailing = false;
  let stopped = false;
  onLeave(() => { stopped = true; });
  const recordRow = (record) => {
    const service = record.userIdentity && record.userIdentity.type === 'Service';
    const data = record.dynamodb || {};
    return h('tr', { 'data-event': record.eventName },
      h('td', { class: 'num', text: data.SequenceNumber }),
      h('td', {}, record.eventName, service ? [' ', h('span', { class: 'tag ttl', title: 'deleted by Time to Live', text: 'TTL' })] : null),
      h('td', { text: data.ApproximateCreationDateTime ? new Date(data.ApproximateCreationDateTime * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z/, '') : '' }),
      h('td', { class: 'cell', text: JSON.stringify(plainItem(data.Keys)) }),
      h('td', {}, data.OldImage ? h('pre', {}, JSON.stringify(plainItem(data.OldImage), null, 1)) : ''),
      h('td', {}, data.NewImage ? h('pre', {}, JSON.stringify(plainItem(data.NewImage), null, 1)) : ''));
  };
  const tick = async () => {
    if (stopped) return;
    try {
      const described = (await streams('DescribeStream', { StreamArn: arn })).StreamDescription;
      shardsOut.replaceChildren(table(['Shard', 'Parent', 'Sequence numbers', 'State'],
        (described.Shards || []).map((s) => h('tr', {},
          h('td', { text: s.ShardId }), h('td', { text: s.ParentShardId || '' }),
          h('td', { text: s.SequenceNumberRange.StartingSequenceNumber + ' – ' + (s.SequenceNumberRange.EndingSequenceNumber || '') }),
          h('td', { text: s.SequenceNumberRange.EndingSequenceNumber ? 'closed' : 'open' })))));
      for (const shard of described.Shards || []) {
        if (!iterators.has(shard.ShardId)) {
          // Shards met after the first look are read whole: they are the children of
          // the shards being tailed.
          const latest = fromLatest && !tailing;
          const first = await streams('GetShardIterator', { StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: latest ? 'LATEST' : 'TRIM_HORIZON' });
          iterators.set(shard.ShardId, first.ShardIterator);
        }
        for (let calls = 0; calls < STREAM_CALLS_PER_TICK && iterators.get(shard.ShardId); calls += 1) {
          const got = await streams('GetRecords', { ShardIterator: iterators.get(shard.ShardId), Limit: 1000 });
          iterators.set(shard.ShardId, got.NextShardIterator || null);
          for (const record of got.Records || []) {
            total += 1;
            kept.push(record);
            if (kept.length > STREAM_KEPT) kept.shift();
          }
          if (!(got.Records || []).length) break;
        }
      }
      tailing = true;
      if (stopped) return;
      recordsBody.replaceChildren(...kept.slice().reverse().map(recordRow));
      counter.textContent = integer.format(total) + ' records read, the last ' + Math.min(total, STREAM_KEPT) + ' shown, newest first.';
    } catch (error) {
      counter.replaceChildren(errorBox(error));
    }
    if (!stopped) setTimeout(tick, POLL_MS);
  };
  tick();
  return [
    h('p', { class: 'crumbs' }, h('a', { href: '#/tables', text: 'Tables' }), ' / ',
      h('a', { href: link(['table', name]), text: name }), ' /'),
    h('h1', { text: 'Stream of ' + name }),
    h('p', { class: 'muted', text: arn + ' · ' + t.StreamSpecification.StreamViewType + ' · polled every ' + POLL_MS / 1000 + ' s' }),
    h('p', {}, fromLatest
      ? ['New records only. ', h('a', { href: link(['stream', name]), text: 'Read from the oldest record kept' })]
      : ['From the oldest record kept (up to ' + integer.format(STREAM_CALLS_PER_TICK * 1000) + ' a shard a poll). ',
        h('a', { href: link(['stream', name], { from: 'latest' }), text: 'New records only' })]),
    h('h2', { text: 'Shards' }), shardsOut,
    h('h2', { text: 'Records' }), counter,
    h('div', { class: 'scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Sequence', 'Event', 'Time (UTC)', 'Keys', 'Old image', 'New image'].map((c) => h('th', { scope: 'col', text: c })))),
      recordsBody)),
  ];
}

// ---- Capacity and heat ---------------------------------------------------------------

// The series of /metrics the capacity page reads: name{labels} value.
function parseMetrics(text) {
  const series = [];
  for (const line of text.split('\n')) {
    const match = /^shoal_(index_)?((?:consumed_(?:read|write)_capacity_units_total|throttled_(?:read|write)_requests_total))\{([^}]*)\} (\S+)$/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const pair of match[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2].replace(/\\(.)/g, '$1');
    // An index's arm (shoal_index_consumed_…) goes in the index's row under the table's name.
    series.push({ name: 'shoal_' + match[2], labels, value: Number(match[4]) });
  }
  return series;
}

// Names in code-unit order (table and index names are ASCII): localeCompare would load
// the browser's collation data, as Intl does (see `formatted`).
function byName(a, b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

function sparkline(values) {
  const width = 120;
  const height = 24;
  const max = Math.max(1e-9, ...values);
  const node = svg('svg', { width, height, viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': 'last ' + values.length + ' samples' });
  const step = width / Math.max(1, RATE_SAMPLES - 1);
  const points = values.map((v, i) => (i * step).toFixed(1) + ',' + (height - 1 - v / max * (height - 2)).toFixed(1)).join(' ');
  node.append(svg('polyline', { points, fill: 'none', stroke: '#0b5cad', 'stroke-width': 1.5 }));
  return node;
}

async function capacityPage() {
  const out = h('div', { id: 'capacity' }, h('p', { class: 'muted', text: 'Sampling…' }));
  const heat = h('div', { id: 'hot-keys' });
  const history = new Map();   // row key → { last, rates: [] }
  let before = null;
  let stopped = false;
  onLeave(() => { stopped = true; });
  const sample = async () => {
    if (stopped) return;
    try {
      const text = await (await fetch('/metrics')).text();
      const now = performance.now();
      const rows = new Map();
      for (const s of parseMetrics(text)) {
        const key = s.labels.table + '\u0000' + (s.labels.index || '');
        if (!rows.has(key)) rows.set(key, { table: s.labels.table, index: s.labels.index || '', values: {} });
        rows.get(key).values[s.name] = s.value;
      }
      const seconds = before ? (now - before) / 1000 : 0;
      before = now;
      const kinds = ['shoal_consumed_read_capacity_units_total', 'shoal_consumed_write_capacity_units_total',
        'shoal_throttled_read_requests_total', 'shoal_throttled_write_requests_total'];
      const drawnRows = [...rows.values()].sort((a, b) => byName(a.table + '\u0000' + a.index, b.table + '\u0000' + b.index)).map((row) => {
        const key = row.table + '\u0000' + row.index;
        const past = history.get(key) || { last: {}, rates: kinds.map(() => []) };
        const rates = kinds.map((kind, i) => {
          const value = row.values[kind];
          const last = past.last[kind];
          const rate = seconds > 0 && value !== undefined && last !== undefined ? Math.max(0, (value - last) / seconds) : 0;
          past.rates[i].push(rate);
          if (past.rates[i].length > RATE_SAMPLES) past.rates[i].shift();
          return rate;
        });
        past.last = row.values;
        history.set(key, past);
        const throttled = (row.values[kinds[2]] || 0) + (row.values[kinds[3]] || 0);
        return h('tr', { 'data-capacity': row.table + (row.index ? '/' + row.index : '') },
          h('td', {}, h('a', { href: link(['table', row.table]), text: row.table })),
          h('td', { text: row.index || '(table)' }),
          num(row.values[kinds[0]] === undefined ? '–' : decimal.format(rates[0])),
          num(row.values[kinds[1]] === undefined ? '–' : decimal.format(rates[1])),
          h('td', {}, sparkline(past.rates[0].map((r, i) => r + past.rates[1][i]))),
          num(row.values[kinds[0]] === undefined ? '–' : decimal.format(row.values[kinds[0]])),
          num(row.values[kinds[1]] === undefined ? '–' : decimal.format(row.values[kinds[1]])),
          num(h('span', { class: throttled ? 'tag bad' : null }, integer.format(row.values[kinds[2]] || 0) + ' / ' + integer.format(row.values[kinds[3]] || 0))));
      });
      if (stopped) return;
      out.replaceChildren(drawnRows.length
        ? table(['Table', 'Index', 'RCU/s#', 'WCU/s#', 'Units/s, last minute', 'Read units in all#', 'Write units in all#', 'Throttled reads / writes#'], drawnRows)
        : h('p', { class: 'muted', text: 'No capacity consumed yet.' }));
    } catch (error) {
      out.replaceChildren(errorBox(error));
    }
    if (!stopped) setTimeout(sample, POLL_MS);
  };
  // The page is drawn with its first sample and the hottest keys, asked for at once.
  await Promise.all([sample(), hotKeys(heat, () => stopped)]);
  return [
    h('h1', { text: 'Capacity and heat' }),
    h('p', { class: 'muted', text: 'Consumed units per second and throttled requests, from the server\'s /metrics (the meter every request goes through; throttling with --capacity enforce). A table row counts every arm; an index row only its own: reads of the index and the writes that maintain it.' }),
    out,
    h('h2', { text: 'Hottest keys' }),
    heat,
  ];
}

// The hottest keys, from Contributor Insights (the admin API's /shoal/contributors), of
// each table and GSI that has it on, and a form to turn it on (UpdateContributorInsights).
const RULES = {
  PKC: 'most accessed partition keys (3 × write units + read units)',
  PKT: 'most throttled partition keys (requests)',
  SKC: 'most accessed items (3 × write units + read units)',
  SKT: 'most throttled items (requests)',
};
const HOT_FOLLOWED_MAX = 20;  // tables and indexes whose rankings one refresh reads
const HOT_TOP = 10;           // keys per rule

async function hotKeys(out, stopped) {
  const rankings = h('div', { id: 'hot-rankings' });
  const choice = h('select', { name: 'insights-table', 'aria-label': 'Table' });
  const said = h('span', { 'aria-live': 'polite' });
  // The tables to choose from are listed while the first rankings are read.
  const listed = call('ListTables', { Limit: 100 }).then((answer) => {
    choice.replaceChildren(...(answer.TableNames || []).map((name) => h('option', { value: name, text: name })));
  }, (error) => said.replaceChildren(errorBox(error)));
  const form = h('form', { class: 'row', onsubmit: async (event) => {
    event.preventDefault();
    try {
      const answer = await call('UpdateContributorInsights', { TableName: choice.value, ContributorInsightsAction: 'ENABLE' });
      said.textContent = choice.value + ': ' + (answer.ContributorInsightsStatus || 'ENABLING').toLowerCase();
      tick();
    } catch (error) {
      said.replaceChildren(errorBox(error));
    }
  } }, field('Turn Contributor Insights on for', choice),
  h('button', { type: 'submit', id: 'enable-insights', text: 'Turn on' }), said);
  out.replaceChildren(rankings, form);
  let timer = null;
  const tick = async () => {
    clearTimeout(timer);
    if (stopped()) return;
    try {
      const followed = ((await adminJson('GET', 'contributors')).followed || []).slice(0, HOT_FOLLOWED_MAX);
      // Every ranking is asked for at once (at most HOT_FOLLOWED_MAX).
      const reports = await Promise.all(followed.map(({ table: name, index }) => {
        const query = { table: name, minutes: '5', top: String(HOT_TOP) };
        if (index) query.index = index;
        return adminJson('GET', 'contributors?' + new URLSearchParams(query));
      }));
      const parts = [];
      for (const [i, { table: name, index }] of followed.entries()) {
        const report = reports[i];
        const where = name + (index ? ' / ' + index : '');
        parts.push(h('h3', { text: where + ' (last ' + report.minutes + ' minutes)' }));
        for (const rule of report.rules || []) {
          const rows = (rule.contributors || []).map((c) => h('tr', { 'data-hot': name + ':' + (index || '') + ':' + rule.rule },
            h('td', { class: 'cell', text: (c.keys || []).join(' / ') }),
            num(decimal.format(c.value)),
            num(decimal.format(c.overcount_max || 0))));
          parts.push(rows.length
            ? table([RULES[rule.rule] || rule.rule, 'Value#', 'Overcount at most#'], rows)
            : h('p', { class: 'muted', text: 'No ' + (RULES[rule.rule] || rule.rule) + ' yet.' }));
        }
      }
      if (stopped()) return;
      rankings.replaceChildren(...(parts.length ? parts
        : [h('p', { class: 'muted', id: 'hot-keys-off', text: 'Contributor Insights is off for every table and index: turn it on below, and the keys used most appear here.' })]));
    } catch (error) {
      rankings.replaceChildren(error.status === 404
        ? h('p', { class: 'muted', id: 'hot-keys-missing', text: 'This server keeps no per-key heat (no /shoal/contributors).' })
        : errorBox(error));
    }
    if (!stopped()) timer = setTimeout(tick, POLL_MS * 2);
  };
  await Promise.all([listed, tick()]);
}

// ---- Testing knobs -------------------------------------------------------------------

const EXAMPLE_RULE = { id: 'throttle-puts', operation: 'PutItem', table: '*', error: { code: 'ThrottlingException', probability: 0.5 } };

async function knobsPage() {
  const rulesOut = h('div', { id: 'fault-rules' });
  const message = h('div', { 'aria-live': 'polite' });
  let stopped = false;
  onLeave(() => { stopped = true; });
  const drawRules = async () => {
    if (stopped) return;
    try {
      const listed = await adminJson('GET', 'faults');
      const rows = listed.rules.map((rule) => h('tr', { 'data-rule': rule.id },
        h('td', { text: rule.id }),
        h('td', { text: rule.operation }),
        h('td', { text: rule.table + (rule.index ? '/' + rule.index : '') }),
        h('td', { class: 'cell', text: JSON.stringify(rule.error || rule.latency || rule.drop_connection || {}) }),
        h('td', { class: 'num', 'data-matched': rule.id, text: integer.format(rule.matched) }),
        h('td', { class: 'num', 'data-injected': rule.id, text: integer.format(rule.injected) }),
        h('td', {}, h('button', { type: 'button', class: 'plain', 'aria-label': 'Remove rule ' + rule.id, text: 'Remove', onclick: async () => {
          try { await admin('DELETE', 'faults/' + encodeURIComponent(rule.id)); } catch (error) { message.replaceChildren(errorBox(error)); }
          drawRules();
        } }))));
      rulesOut.replaceChildren(
        h('p', { class: 'muted', text: 'Seed ' + listed.seed + '. Counters refresh every ' + POLL_MS / 1000 + ' s.' }),
        rows.length ? table(['Rule', 'Operation', 'Table', 'Does', 'Matched#', 'Injected#', ''], rows)
          : h('p', { class: 'muted', text: 'No fault rules in force.' }));
    } catch (error) {
      rulesOut.replaceChildren(errorBox(error));
    }
  };
  const poll = async () => {
    await drawRules();
    if (!stopped) setTimeout(poll, POLL_MS);
  };
  const ruleText = h('textarea', { id: 'rule-text', spellcheck: 'false', 'aria-label': 'Fault rule as JSON' }, JSON.stringify(EXAMPLE_RULE, null, 2));
  // The rules and the settings are asked for at once; the page is drawn with both.
  const [settings] = await Promise.all([adminJson('GET', 'settings'), drawRules()]);
  if (!stopped) setTimeout(poll, POLL_MS);
  const lag = (l) => (l ? (l.min_ms === l.max_ms ? l.min_ms + ' ms' : l.min_ms + '–' + l.max_ms + ' ms') : 'off');
  const settingRows = [
    ['Capacity emulation', settings.capacity],
    ['GSI lag', lag(settings.gsi_lag)],
    ['Eventually consistent reads lag', lag(settings.eventual_reads)],
    ['Lag seed', settings.lag_seed],
    ['Transaction conflicts', settings.transaction_conflicts ? 'on' : 'off'],
    ['Write hold', settings.write_hold_ms + ' ms'],
    ['Transient statuses', settings.transient_status_seconds + ' s'],
    ['Stream retention / shard', settings.stream_retention_seconds + ' s / ' + settings.stream_shard_seconds + ' s'],
    ['Time to Live sweep', settings.ttl_sweep_seconds + ' s'],
    ['Item collection cap', bytes(settings.item_collection_limit_bytes)],
  ].filter(([, v]) => v !== undefined);
  const crashMode = select('crash-mode', [['kill', 'kill (as SIGKILL)'], ['power-loss', 'power loss (unsynced writes lost)']], 'kill');
  const crashConfirm = h('span', { hidden: true, id: 'crash-confirm' },
    'The server will end at once, for every client. ',
    h('button', { type: 'button', class: 'danger', text: 'Crash it now', onclick: async () => {
      try {
        await fetch('/shoal/crash', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ mode: crashMode.value }) });
      } catch (_) { /* the connection closes without an answer: that is the crash */ }
      message.replaceChildren(h('p', { class: 'error', text: 'Crash requested (' + crashMode.value + ').' }));
      crashConfirm.hidden = true;
    } }),
    ' ', h('button', { type: 'button', class: 'plain', text: 'Cancel', onclick: () => { crashConfirm.hidden = true; } }));
  return [
    h('h1', { text: 'Testing knobs' }),
    h('h2', { text: 'Fault rules' }), rulesOut,
    h('h3', { text: 'Add a rule' }),
    h('p', { class: 'muted', text: 'A rule or a rule set as docs/TESTING-TOOLS.md describes it.' }),
    ruleText,
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'add-rule', text: 'Add', onclick: async () => {
        try {
          await admin('POST', 'faults', ruleText.value);
          message.replaceChildren(h('p', { class: 'ok', text: 'Added.' }));
        } catch (error) { message.replaceChildren(errorBox(error)); }
        drawRules();
      } }),
      h('button', { type: 'button', class: 'plain', text: 'Remove every rule', onclick: async () => {
        try { await admin('DELETE', 'faults'); } catch (error) { message.replaceChildren(errorBox(error)); }
        drawRules();
      } })),
    message,
    h('h2', { text: 'Consistency and emulation (set when the server starts)' }),
    table(['Setting', 'Value'], settingRows.map(([k, v]) => h('tr', {}, h('th', { scope: 'row', text: k }), h('td', { text: String(v) })))),
    h('h2', { text: 'Crash' }),
    h('div', { class: 'row' }, field('Mode', crashMode),
      h('button', { type: 'button', class: 'danger', id: 'crash', text: 'Crash the server…', onclick: () => {
        crashConfirm.hidden = false;
        crashConfirm.querySelector('button').focus();
      } }), crashConfirm),
  ];
}

// ---- Bench report --------------------------------------------------------------------

async function reportPage() {
  const frameHolder = h('div', { id: 'report-frame' });
  const input = h('input', { type: 'file', id: 'report-file', accept: '.json,application/json' });
  input.addEventListener('change', async () => {
    const file = input.files[0];
    if (!file) return;
    frameHolder.replaceChildren(h('p', { class: 'muted', text: 'Rendering ' + file.name + '…' }));
    try {
      const page = await admin('POST', 'bench-report', await file.text());
      // Sandboxed: the report is a page of its own, with no script and no access to this one.
      frameHolder.replaceChildren(h('iframe', { class: 'report', sandbox: '', title: 'Bench report ' + file.name, srcdoc: page }));
    } catch (error) {
      frameHolder.replaceChildren(errorBox(error));
    }
  });
  return [
    h('h1', { text: 'Model bench report' }),
    h('p', { text: 'Open a report saved with shoal bench --model FILE --json: the page shown is the one --html writes.' }),
    field('Report (JSON)', input),
    frameHolder,
  ];
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', route);
