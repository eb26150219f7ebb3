#!/usr/bin/env bash
# Downloads IWSLT'14 De-En, applies Moses tokenisation + BPE (10k ops), then:
#   fairseq-preprocess --source-lang de --target-lang en --trainpref $TEXT/train ... \
#       --destdir data-bin/iwslt14.tokenized.de-en --workers 20
# resulting dictionaries: dict.de.txt 8,848 types, dict.en.txt 6,632 types
echo "see examples/translation/README.md"
