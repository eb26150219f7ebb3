#!/bin/bash
set -e
litgpt download mistralai/Mistral-7B-v0.1
litgpt download mistralai/Mistral-7B-Instruct-v0.2
