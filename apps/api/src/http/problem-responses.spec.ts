import type { ResponseObject, SchemaObject } from '@nestjs/swagger';
import { integer, nullable, text } from './body-schema';
import { ref } from './named-schemas';
import { problemResponse, withProblems } from './problem-responses';

const typesOf = (response: ResponseObject | undefined): unknown => {
  const schema = response?.content?.['application/problem+json']?.schema as SchemaObject;
  return ((schema.allOf?.[1] as SchemaObject).properties?.['type'] as SchemaObject).enum;
};

describe('problem responses in the OpenAPI document', () => {
  it('lists the problem types of one status as an enum of type, over the Problem schema', () => {
    const response = problemResponse(['stale-lease', 'conflict']);
    expect(response.content?.['application/problem+json']?.schema).toEqual({
      allOf: [
        { $ref: '#/components/schemas/Problem' },
        {
          type: 'object',
          required: ['type'],
          properties: { type: { type: 'string', enum: ['/problems/stale-lease', '/problems/conflict'] } },
        },
      ],
    });
    expect(response.description).toContain('`/problems/stale-lease`');
    expect(response.headers).toBeUndefined();
    expect(problemResponse(['quota-exceeded']).headers).toHaveProperty('Retry-After');
  });

  it('adds problems to the response of their status, beside those listed already, once each', () => {
    const own = { '200': { description: 'ok' }, '409': problemResponse(['stale-lease']) };
    const merged = withProblems(own, ['conflict', 'stale-lease', 'unauthorized', 'unavailable']);
    expect(Object.keys(merged).sort()).toEqual(['200', '401', '409', '503']);
    expect(merged['200']).toBe(own['200']);
    expect(typesOf(merged['409'])).toEqual(['/problems/stale-lease', '/problems/conflict']);
    expect(typesOf(merged['401'])).toEqual(['/problems/unauthorized']);
    expect(merged['503']?.headers).toHaveProperty('Retry-After');
  });

  it('makes a refusal documented without its problem the one the filter sends for its status', () => {
    const merged = withProblems({ '403': { description: 'forbidden' }, '400': { description: 'bad' } }, []);
    expect(typesOf(merged['403'])).toEqual(['/problems/forbidden']);
    expect(typesOf(merged['400'])).toEqual(['/problems/validation-error']);
  });
});

describe('named schemas', () => {
  it('are referred to by title, and a title names one schema only', () => {
    const Example = { title: 'SpecExample', ...integer(0) };
    expect(ref(Example)).toEqual({ $ref: '#/components/schemas/SpecExample' });
    expect(() => ref({ title: 'SpecExample', ...text() })).toThrow(/two named schemas are SpecExample/);
  });

  it('cannot be made nullable by reference (OpenAPI 3.0 ignores what stands beside a $ref)', () => {
    expect(() => nullable(ref({ title: 'SpecNullable', ...text() }))).toThrow(/cannot be made nullable/);
  });
});
