'''Terminal progress bar.'''
import sys
import time

TOTAL_BAR_LENGTH = 65.
last_time = time.time()
begin_time = last_time


def progress_bar(current, total, msg=None):
    global last_time, begin_time
    if current == 0:
        begin_time = time.time()
    cur_len = int(TOTAL_BAR_LENGTH * current / total)
    sys.stdout.write(' [' + '=' * cur_len + '>' + '.' * int(TOTAL_BAR_LENGTH - cur_len - 1) + ']')
    if msg:
        sys.stdout.write(' | ' + msg)
    sys.stdout.write('\r' if current < total - 1 else '\n')
    sys.stdout.flush()
