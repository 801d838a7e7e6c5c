import { InvalidInputError } from '@granule/core';
import { isAlias, isMap, isSeq, parseDocument } from 'yaml';
import { sealData, type ClearSecret } from './secret-sealing';
import { valueAt, type Seal } from './sensitive-values';
import { formatPath } from './yaml-source';

/**
 * Seals the secrets of one plugin data file as text (YAML or JSON), for a plugin or release that
 * is sent to the config-store whole: task parameters by the task rule, setting leaves marked
 * `type: password` / `sensitive: true` or under a sensitive name (`sensitiveDataPaths`). A YAML
 * file keeps its comments, key order and lines (`yaml` may respace them); each secret becomes a
 * one-line `{$sealed: ...}` on its key's line. A file that does not parse is returned as it is (the plugin validator reports it).
 * Without `seal` the text is unchanged and `clear` lists the secrets that needed sealing.
 */
export function sealDataFileText(file: string, text: string, seal?: Seal): { text: string; clear: ClearSecret[] } {
  if (/\.json$/i.test(file)) {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return { text, clear: [] };
    }
    const sealed = sealData(data, seal);
    if (!seal || sealed.data === data) return { text, clear: sealed.clear };
    return { text: `${JSON.stringify(sealed.data, null, 2)}\n`, clear: [] };
  }
  const doc = parseDocument(text, { merge: true, uniqueKeys: false });
  if (doc.errors.length > 0) return { text, clear: [] };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch {
    return { text, clear: [] };
  }
  const found = sealData(data, undefined).clear;
  if (!seal || found.length === 0) return { text, clear: found };
  const notInPlace = (path: readonly (string | number)[]): InvalidInputError =>
    new InvalidInputError([
      {
        severity: 'error',
        code: 'SECRET_NOT_SEALED',
        file,
        path: formatPath(path),
        message: 'a secret written through a YAML anchor, alias or merge key cannot be sealed in place: write it out',
      },
    ]);
  for (const { path } of found) {
    // The value must be the document's own node there: one reached through an alias or a merge
    // key would stay in clear at its anchor.
    const parent = doc.getIn(path.slice(0, -1), true);
    const own = doc.getIn(path, true) as { anchor?: string } | undefined;
    if ((!isMap(parent) && !isSeq(parent)) || own === undefined || isAlias(own) || own.anchor !== undefined)
      throw notInPlace(path);
    const node = doc.createNode(seal(valueAt(data, path)));
    node.flow = true;
    doc.setIn(path, node);
  }
  return { text: doc.toString({ lineWidth: 0, flowCollectionPadding: false }), clear: [] };
}
