return L().release()
