package main

import "github.com/kord-fss/kord/client"

func dialApp(addr string) (*client.Client, error) { return client.Dial(addr, nil) }
