import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

// The `path` a command was given (a menu on a file, a toolbar button), or '' when it was given none.
export function pathArgument(args: ReadonlyPartialJSONObject): string {
  return typeof args.path === 'string' ? args.path : '';
}

// What a command takes (its `describedBy`): nothing, or the `path` of a file or folder.
export const NO_ARGUMENTS = { args: { type: 'object', properties: {} } };

export function pathArguments(description: string) {
  return {
    args: {
      type: 'object',
      properties: { path: { type: 'string', description } }
    }
  };
}
