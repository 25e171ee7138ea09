'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../src/slug');

test('lowercases words', () => {
  assert.strictEqual(slugify('Hello'), 'hello');
});

test('joins words with a dash', () => {
  assert.strictEqual(slugify('hello world'), 'hello-world');
});
