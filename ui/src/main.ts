// Entry point: styles and the app shell over the server this page came from.

import './style.css';
import { serverApi } from './api';
import { App } from './app';

const root = document.getElementById('app');
if (root) new App(root, serverApi).start();
