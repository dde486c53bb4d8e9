return release()
