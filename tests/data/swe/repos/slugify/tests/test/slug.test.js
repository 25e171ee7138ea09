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

test('collapses runs of separators', () => {
  assert.strictEqual(slugify('Hello,  World'), 'hello-world');
});

test('trims separators at the ends', () => {
  assert.strictEqual(slugify('Hi there!'), 'hi-there');
});
