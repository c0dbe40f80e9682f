import Form from '@rjsf/core';
import type { ErrorSchema, RJSFSchema, UiSchema } from '@rjsf/utils';
import { useEffect, useMemo, useRef, useState } from 'react';
import { asUiError, studio } from '../../api/studio.ts';
import { buttonTemplates } from './buttons.tsx';
import { errorSchemaOf, hostValidator, placeProblems, problemLine, relevantProblems } from './hostValidation.ts';
import './forms.css';

/** Where the value stands with the host's validator. */
export interface SchemaValidity {
  /** True once the host found nothing wrong with the current value (false while `pending`). */
  valid: boolean;
  /** A check of the latest value is under way. */
  pending: boolean;
  /** One line per problem, as a run reports it ("contact.email must match pattern …"), or why the schema cannot be used; while `pending`, those of the previous check. */
  problems: string[];
}

export interface SchemaFormProps {
  /** A JSON Schema (2020-12, or draft-07 when its `$schema` says so), as in a function's inputSchema. */
  schema: Record<string, unknown> | undefined;
  value: unknown;
  /** Every edit, with the whole new value (defaults the schema gives are filled in when the form opens). */
  onChange: (value: unknown) => void;
  /** Called after each check of the value by the host's validator (and when one starts). */
  onValidity?: ((validity: SchemaValidity) => void) | undefined;
  /** Prefix of the ids of the fields (default "root"): two forms on one page need different ones. */
  idPrefix?: string | undefined;
  disabled?: boolean | undefined;
}

const VALIDATE_DELAY_MS = 150;
const UI_SCHEMA: UiSchema = { 'ui:submitButtonOptions': { norender: true } };

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['oneOf', 'anyOf', 'allOf', 'prefixItems'];
const SCHEMA_ONE = ['items', 'additionalItems', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'contains', 'not', 'if', 'then', 'else'];
const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The schema rjsf draws: a field with a `const` (a discriminator such as `"kind": {"const": "courier"}`)
 * is shown read-only, since any other value is wrong. The host validates against the schema as given.
 */
function forDisplay(schema: unknown, isOption = false): unknown {
  if (!isMap(schema)) return schema;
  const s: Record<string, unknown> = { ...schema };
  for (const k of SCHEMA_MAPS) {
    const map = s[k];
    if (isMap(map)) s[k] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, forDisplay(sub)]));
  }
  for (const k of SCHEMA_LISTS) {
    const list = s[k];
    if (Array.isArray(list)) s[k] = list.map((sub) => forDisplay(sub, true));
  }
  for (const k of SCHEMA_ONE) {
    const sub = s[k];
    if (Array.isArray(sub)) s[k] = sub.map((x) => forDisplay(x));
    else if (isMap(sub)) s[k] = forDisplay(sub);
  }
  // A `const` that is one option of a titled enum (`oneOf: [{const, title}]`) is a choice, not a field.
  if ('const' in s && !isOption && s.readOnly === undefined) s.readOnly = true;
  return s;
}

/** An object schema that describes no fields: nothing to fill in. */
function takesNothing(schema: Record<string, unknown>): boolean {
  if (schema.type !== undefined && schema.type !== 'object') return false;
  const properties = schema.properties;
  if (properties && typeof properties === 'object' && Object.keys(properties).length > 0) return false;
  return !['oneOf', 'anyOf', 'allOf', '$ref', 'if', 'dependentSchemas', 'patternProperties'].some((k) => k in schema) && !schema.additionalProperties;
}

/**
 * A form for a JSON Schema (react-jsonschema-form): nested objects, arrays, `$ref`/`$defs`,
 * `oneOf`/`anyOf`, titled enums, formats and defaults. The value is checked as the user types by
 * the host's validator (the one runs use), and its problems are shown next to their fields.
 */
export function SchemaForm({ schema, value, onChange, onValidity, idPrefix = 'root', disabled }: SchemaFormProps) {
  const rootSchema = useMemo<RJSFSchema>(() => {
    const s = schema ?? { type: 'object' };
    // rjsf reads `$schema` to pick its own validator's dialect; the host does that, so rjsf does not need it.
    const { $schema: _dialect, ...rest } = s;
    return forDisplay(rest) as RJSFSchema;
  }, [schema]);
  const [errors, setErrors] = useState<{ extra: ErrorSchema | undefined; schemaProblem: string | undefined }>({ extra: undefined, schemaProblem: undefined });
  const validity = useRef(onValidity);
  validity.current = onValidity;
  const lastProblems = useRef<string[]>([]);

  // Each value is checked by the host a moment after the last keystroke; only the latest answer counts.
  useEffect(() => {
    let current = true;
    validity.current?.({ valid: false, pending: true, problems: lastProblems.current });
    const timer = setTimeout(() => {
      studio.schemas
        .validate({ schema: schema ?? { type: 'object' }, value: value ?? {} })
        .then(({ problems }) => {
          if (!current) return;
          const placed = placeProblems(relevantProblems(problems, rootSchema, value));
          setErrors({ extra: placed.length ? errorSchemaOf(placed) : undefined, schemaProblem: undefined });
          lastProblems.current = placed.map(problemLine);
          validity.current?.({ valid: placed.length === 0, pending: false, problems: lastProblems.current });
        })
        .catch((e: unknown) => {
          if (!current) return;
          const message = asUiError(e).message;
          setErrors({ extra: undefined, schemaProblem: message });
          lastProblems.current = [message];
          validity.current?.({ valid: false, pending: false, problems: lastProblems.current });
        });
    }, VALIDATE_DELAY_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [schema, rootSchema, value]);

  if (schema && takesNothing(schema)) return <p className="muted">This function takes no arguments.</p>;
  return (
    <div className="schema-form">
      {errors.schemaProblem && (
        <p className="error-text" role="alert">
          {errors.schemaProblem}
        </p>
      )}
      <Form
        tagName="div"
        schema={rootSchema}
        uiSchema={UI_SCHEMA}
        templates={{ ButtonTemplates: buttonTemplates }}
        formData={value}
        validator={hostValidator}
        idPrefix={idPrefix}
        extraErrors={errors.extra}
        showErrorList={false}
        noHtml5Validate
        disabled={disabled}
        onChange={(e) => onChange(e.formData)}
      />
    </div>
  );
}
