return run('refund')
